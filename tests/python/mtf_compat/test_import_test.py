"""Mesh TensorFlow's import_test.py (tensorflow/mesh) ported: the module
imports."""
import mtf  # noqa: F401


def test_import():
    pass
