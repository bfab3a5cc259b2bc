"""Mesh TensorFlow's transformer/transformer_layers_test.py (tensorflow/mesh),
ported: its NumpyConverter (NumPy arrays to mtf tensors) becomes
placeholders fed the same arrays, its namedtuple context the same
namedtuple."""
import collections

import numpy as np

import mtf
from mtf.transformer import transformer_layers


def test_conv1d_call_same_input_output_dims():
    batch, d_model, length = 2, 6, 3
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    inputs = np.random.randint(0, 10, size=[batch, length])
    inputs_mtf = mtf.placeholder(mesh, mtf.Shape([mtf.Dimension("batch", batch),
                                                  mtf.Dimension("length", length)]),
                                 dtype=mtf.int32)
    # Dummy context with necessary information for Conv1DLayer.call
    Context = collections.namedtuple("Context", ["inputs", "activation_dtype", "mode"])
    context = Context(inputs=inputs_mtf, activation_dtype=mtf.float32, mode="train")
    x = np.random.randn(batch, length, d_model)
    x_mtf = mtf.placeholder(mesh, mtf.Shape([mtf.Dimension("batch", batch),
                                             mtf.Dimension("length", length),
                                             mtf.Dimension("d_model", d_model)]))
    conv_layer = transformer_layers.Conv1DLayer(filter_size=3, output_size=d_model)
    output_mtf = conv_layer.call(context, x_mtf)
    assert [batch, length, d_model] == output_mtf.shape.to_integer_list
    # (Beyond the original: it runs, and padding positions contribute nothing:
    # with every id 0 the output is the bias alone, at every position.)
    session = mtf.Session(graph)
    out = session.run(output_mtf, {inputs_mtf: inputs.astype(np.int32),
                                   x_mtf: x.astype(np.float32)})
    assert out.shape == (batch, length, d_model) and np.isfinite(out).all()
    padded = session.run(output_mtf, {inputs_mtf: np.zeros_like(inputs, np.int32),
                                      x_mtf: x.astype(np.float32)})
    np.testing.assert_array_equal(padded, np.broadcast_to(padded[:1, :1], padded.shape))
