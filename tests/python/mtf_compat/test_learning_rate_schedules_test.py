"""Mesh TensorFlow's transformer/learning_rate_schedules_test.py
(tensorflow/mesh) ported: the same steps and assertions, its
linear_decay_learning_rate(step, total_train_steps, initial_lr, offset)
written as mtf's schedule text "initial_lr*linear_decay(offset, total)" and
evaluated with LearningRate.at instead of a TensorFlow session."""
import pytest

import mtf


def linear_decay_lr(step, total_train_steps, initial_lr, offset):
    rate = mtf.optimize.LearningRate(f"{initial_lr}*linear_decay({offset}, {total_train_steps})")
    return rate.at(step)


def test_linear_decay_learning_rate():
    # At step 0 (no offset), the learning rate is initial_lr.
    assert linear_decay_lr(0, 100, 0.001, 0) == pytest.approx(0.001)
    # Halfway, initial_lr / 2.
    assert linear_decay_lr(50, 100, 0.001, 0) == pytest.approx(0.0005)
    # At the end of training, 0.
    assert linear_decay_lr(100, 100, 0.001, 0) == pytest.approx(0)
    # Before the offset, initial_lr.
    assert linear_decay_lr(40, 100, 0.001, 50) == pytest.approx(0.001)
