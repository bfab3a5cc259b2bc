"""Mesh TensorFlow's transformer/funnel_transformer_test.py (tensorflow/mesh),
ported: its NumpyConverter (NumPy arrays to mtf tensors and back) becomes
placeholders fed the arrays and a Session run, and its lowering's variable
list the graph's."""
import numpy as np

import mtf
from mtf.transformer import funnel_transformer, transformer, transformer_layers

DIM_NAMES = ["outer_batch", "batch", "length", "d_model"]


def create_dummy_model(mesh, shapes, n_blocks=2, block_param_size_str="2_2",
                       block_repeat_size_str="1_1"):
    """A dummy model and layer stack with 4-dimensional input."""
    assert len(shapes) == 4
    outer_batch_size, batch_size, length, d_model = shapes
    batch_dim = mtf.Dimension("batch", batch_size)
    outer_batch_dim = mtf.Dimension("outer_batch", outer_batch_size)
    length_dim = mtf.Dimension("length", length)
    block_param_size = list(map(int, block_param_size_str.split("_")))
    block_repeat_size = list(map(int, block_repeat_size_str.split("_")))

    sublayers_initial = [transformer.sublayer_dropout]
    sublayers_per_layer = [transformer.sublayer_rms_norm, transformer.sublayer_call_layer,
                           transformer.sublayer_dropout, transformer.sublayer_residual]
    sublayers_final = [transformer.sublayer_rms_norm, transformer.sublayer_dropout]
    submodules = [transformer_layers.SelfAttention(), transformer_layers.DenseReluDense()]

    n_sublayers = np.array(block_param_size).prod()
    layers = submodules * n_sublayers
    layer_stack = funnel_transformer.FunnelTransformerLayerStack(
        layers=layers, n_blocks=n_blocks, block_param_size=block_param_size,
        block_repeat_size=block_repeat_size, sublayers_initial=sublayers_initial,
        sublayers_per_layer=sublayers_per_layer, sublayers_final=sublayers_final)

    model = transformer.Unitransformer(input_vocab_size=10, output_vocab_size=10,
                                       autoregressive=False, max_length=8, d_model=d_model,
                                       layer_stack=layer_stack)

    context = transformer.Context(
        model=model, mesh=mesh, batch_dims=[batch_dim, outer_batch_dim], length_dim=length_dim,
        variable_dtype=mtf.VariableDType(mtf.float32),
        sequence_id=mtf.ones(mesh, mtf.Shape([length_dim])),
        position=mtf.range(mesh, length_dim, dtype=mtf.int32))
    return layer_stack, context


class Converter(object):
    """NumpyConverter's part here: arrays in as placeholders, tensors out
    by running the graph on those feeds."""

    def __init__(self):
        self.graph = mtf.Graph()
        self.mesh = mtf.Mesh(self.graph, "mesh")
        self.feeds = {}

    def convert_np_array_to_mtf_tensor(self, x, dim_names, dtype=mtf.float32):
        shape = mtf.Shape([mtf.Dimension(n, s) for n, s in zip(dim_names, x.shape)])
        t = mtf.placeholder(self.mesh, shape, dtype=dtype)
        self.feeds[t] = x.astype(np.float32 if dtype == mtf.float32 else np.int32)
        return t

    def convert_mtf_tensor_to_np_array(self, t):
        return mtf.Session(self.graph).run(t, self.feeds)


def _run_stack(x, **kwargs):
    converter = Converter()
    layer_stack, context = create_dummy_model(converter.mesh, shapes=x.shape, **kwargs)
    x_mtf = converter.convert_np_array_to_mtf_tensor(x, dim_names=DIM_NAMES)
    return converter, layer_stack, context, layer_stack.call(context, x_mtf)


def test_layer_stack_call_padding_handling():
    converter = Converter()
    x = np.random.randn(2, 3, 4, 5)
    layer_stack, context = create_dummy_model(converter.mesh, shapes=x.shape)
    # The last two sequence positions are padding.
    x[:, :, -2:, :] *= 0
    sequence_id = np.ones_like(x, dtype=np.int32)
    sequence_id[:, :, -2:, :] *= 0
    context.sequence_id = converter.convert_np_array_to_mtf_tensor(
        sequence_id, dim_names=DIM_NAMES, dtype=mtf.int32)
    x_mtf = converter.convert_np_array_to_mtf_tensor(x, dim_names=DIM_NAMES)
    output_mtf = layer_stack.call(context, x_mtf)
    # [2, 3, 4, 5] -> [2, 3, 2, 5]
    actual = converter.convert_mtf_tensor_to_np_array(output_mtf)
    # After pooling, the last sequence position should be padding, i.e., zeros.
    last_position = actual[:, :, -1, :]
    np.testing.assert_allclose(last_position, np.zeros_like(last_position))
    # (Beyond the original: the position before it is not.)
    assert np.abs(actual[:, :, 0, :]).max() > 0


def test_layer_stack_call_pooled_length():
    x = np.random.randn(2, 3, 4, 5)
    converter, _, _, output_mtf = _run_stack(x)
    actual = converter.convert_mtf_tensor_to_np_array(output_mtf)
    assert actual.shape == (2, 3, 2, 5)


def test_layer_stack_call_num_output_layers():
    x = np.random.randn(2, 3, 4, 5)
    _, layer_stack, context, _ = _run_stack(x)
    # +1 accounts for the sublayers_initial. sublayer_final is merged with the
    # last layer of sublayers_per_layer.
    assert len(context.layer_outputs) == len(layer_stack.layers) + 1


def test_layer_stack_call_num_unique_layers():
    x = np.random.randn(2, 3, 4, 5)
    converter, layer_stack, _, _ = _run_stack(x)
    # Test the number of unique layers.
    all_vars = converter.graph.all_variables
    self_attn_vars = [var.name for var in all_vars if "SelfAttention" in var.name]
    # We expect total of `n_layers` of SelfAttention and DenseReluDense layers.
    n_layers = len(layer_stack.layers)
    # We expect n_sublayers` SelfAttention.
    n_sublayers = n_layers // 2
    # Each self attn layer has 4 variables: wq, wk, wv, wo.
    assert len(self_attn_vars) // 4 == n_sublayers


def test_layer_stack_update_context_sequence_id():
    x = np.random.randn(2, 3, 4, 5)
    _, _, context, _ = _run_stack(x)
    assert context.length_dim.size == 2


def test_layer_stack_update_context_position():
    x = np.random.randn(2, 3, 4, 5)
    converter, _, context, _ = _run_stack(x)
    actual = converter.convert_mtf_tensor_to_np_array(context.position)
    np.testing.assert_array_equal(np.arange(2), actual)
