"""The layer-class framework of Mesh TensorFlow's transformer/transformer.py:
Context (what a layer needs to know about the sequences it is called on),
TransformerLayer (a layer called as layer.call(context, x)), LayerStack
(layers between sublayer functions: norm, call, dropout, residual) and
Unitransformer (an encoder or a decoder-only language model: embeddings,
a layer stack, logits and the loss).

Variables are named by the layer that makes them: a stack names its layers
"layer_000", "layer_001", ... (unless set_name gave them names), and a
layer's variables are "<layer name>/<its class>/<variable>", as Mesh
TensorFlow's variable scopes name them. Layers of the same name share
their variables (get_or_create_variable), which is how a Funnel Transformer
block repeats its layers.

Not here: incremental decoding (mtf.models.IncrementalDecoder decodes),
Bitransformer (mtf.models builds the encoder-decoder), and the gin
configuration of the original.
"""

from .. import _mtf as _ops
from .._mtf import layers as _layers

__all__ = ["Context", "TransformerLayer", "LayerStack", "Unitransformer", "sublayer_call_layer",
           "sublayer_dropout", "sublayer_mask_padding", "sublayer_residual",
           "sublayer_rms_norm", "scoped_name"]

_TRAIN = "train"


class Context(object):
    """What layers read while a stack runs: the model, the mesh, the batch
    and length dimensions, the variable dtype, the mode ("train", "eval" or
    "predict"), the ids (inputs), position and sequence_id (0 marks
    padding; another integer an example packed into the sequence), and what
    the stack writes: layer_outputs, layer_index, current_layer and
    current_layer_input."""

    def __init__(self, model, mesh, batch_dims, length_dim, variable_dtype, mode=_TRAIN,
                 position=None, sequence_id=None, inputs=None, losses=None,
                 layer_outputs=None, encoder_output=None, encoder_sequence_id=None,
                 **unused):
        for name in ("states", "new_states", "beam_dim", "initial_position", "constant_states"):
            if unused.get(name) is not None:
                raise ValueError("Context: %s is for Mesh TensorFlow's step-by-step decoding, "
                                 "which mtf does with mtf.models.IncrementalDecoder" % name)
        self.model = model
        self.mesh = mesh
        self.batch_dims = list(batch_dims)
        self.length_dim = length_dim
        self.variable_dtype = variable_dtype
        self.mode = mode
        self.position = position
        self.sequence_id = sequence_id
        self.inputs = inputs
        self.losses = losses
        self.layer_outputs = [] if layer_outputs is None else layer_outputs
        self.encoder_output = encoder_output
        self.encoder_sequence_id = encoder_sequence_id
        self.layer_index = 0
        self.current_layer = None
        self.current_layer_input = None

    @property
    def train(self):
        return self.mode == _TRAIN

    @property
    def activation_dtype(self):
        return self.variable_dtype.activation_dtype

    @property
    def model_dim(self):
        return self.model.model_dim

    @property
    def nonpadding(self):
        """1 where sequence_id is nonzero, in the activation dtype; None
        without a sequence_id tensor."""
        if not isinstance(self.sequence_id, _ops.Tensor):
            return None
        return _ops.cast(_ops.not_equal(self.sequence_id, 0), self.activation_dtype)


class TransformerLayer(object):
    """A layer of a stack: call(context, x) returns a tensor of x's shape."""

    _name = None

    def call(self, context, x):
        raise NotImplementedError("%s.call" % type(self).__name__)

    def set_name(self, name):
        self._name = name

    @property
    def name(self):
        return self._name


def scoped_name(layer, kind, variable):
    """The name of a layer's variable: "<layer name>/<kind>/<variable>"."""
    return "/".join(part for part in (layer.name, kind, variable) if part)


def _stack_name(layer_stack, what):
    return "/".join(part for part in (getattr(layer_stack, "name", None), what) if part)


# Sublayer functions: f(x, layer_stack, context) -> x, run around each layer
# (sublayers_per_layer) and before and after the stack.

def sublayer_call_layer(x, layer_stack, context):
    del layer_stack
    return context.current_layer.call(context, x)


def sublayer_dropout(x, layer_stack, context, dropout_rate=None):
    rate = getattr(layer_stack, "dropout_rate", 0.0) if dropout_rate is None else dropout_rate
    if not context.train or not rate:
        return x
    return _ops.dropout(x, is_training=True, rate=rate)


def sublayer_residual(x, layer_stack, context):
    del layer_stack
    return x + context.current_layer_input


def sublayer_mask_padding(x, layer_stack, context):
    del layer_stack
    mask = context.nonpadding
    return x if mask is None else x * mask


def sublayer_rms_norm(x, layer_stack, context, epsilon=1e-6, name="rms_norm"):
    """mtf.layers.rms_norm over the model dimension; its scale belongs to the
    current layer (the stack's own before and after its layers)."""
    owner = context.current_layer
    if owner is None:  # before the first layer or after the last
        full = _stack_name(layer_stack, ("final_" if context.layer_index else "") + name)
    else:
        full = "/".join(p for p in (owner.name, name) if p)
    return _layers.rms_norm(x, x.shape.dims[-1], epsilon=epsilon, name=full)


class LayerStack(TransformerLayer):
    """Layers run in order, each between sublayers_per_layer (by default
    rms_norm, the layer, dropout, the residual), with sublayers_initial
    before the first (dropout) and sublayers_final after the last (rms_norm,
    dropout, padding masked)."""

    def __init__(self, layers, dropout_rate=0.0, norm_epsilon=1e-6, sublayers_initial=None,
                 sublayers_per_layer=None, sublayers_final=None, name=None):
        self._layers = list(layers)
        self.dropout_rate = dropout_rate
        self.norm_epsilon = norm_epsilon
        self.set_name(name)
        self._sublayers_initial = (sublayers_initial if sublayers_initial is not None
                                   else [sublayer_dropout])
        self._sublayers_per_layer = (sublayers_per_layer if sublayers_per_layer is not None
                                     else [sublayer_rms_norm, sublayer_call_layer,
                                           sublayer_dropout, sublayer_residual])
        self._sublayers_final = (sublayers_final if sublayers_final is not None
                                 else [sublayer_rms_norm, sublayer_dropout,
                                       sublayer_mask_padding])
        for i, layer in enumerate(self._layers):
            if layer.name is None:
                layer.set_name("layer_%03d" % i)

    @property
    def layers(self):
        return self._layers

    def call(self, context, x):
        x = self.call_sublayers(self._sublayers_initial, x, context)
        context.layer_outputs.append(x)
        for layer in self._layers:
            x = self.call_layer(x, layer, context)
            context.layer_outputs.append(x)
            context.layer_index += 1
        context.current_layer = context.current_layer_input = None
        x = self.call_sublayers(self._sublayers_final, x, context)
        context.layer_outputs[-1] = x
        return x

    def call_sublayers(self, sublayers, x, context):
        for sublayer in sublayers:
            x = sublayer(x, self, context)
        return x

    def call_layer(self, x, layer, context):
        """One layer between the per-layer sublayers; its output must keep
        the shape of its input."""
        context.current_layer = layer
        context.current_layer_input = x
        y = self.call_sublayers(self._sublayers_per_layer, x, context)
        if y.shape.to_string() != context.current_layer_input.shape.to_string():
            raise ValueError("layer %s (%s) returned %s for an input of %s; a layer of a stack "
                             "keeps its input's shape" % (layer.name, type(layer).__name__,
                                                          y.shape, x.shape))
        return y


class Unitransformer(object):
    """An encoder (autoregressive=False) or a decoder-only language model:
    token and position embeddings, a layer stack and logits over the output
    vocabulary; call_simple gives the logits and, with targets, the mean
    cross-entropy over the nonpadding targets."""

    def __init__(self, layer_stack, d_model=1024, input_vocab_size=None, output_vocab_size=None,
                 autoregressive=True, max_length=512, z_loss=1e-4, name="transformer",
                 positional_embedding=True):
        if input_vocab_size is None:
            raise ValueError("Unitransformer: input_vocab_size is required")
        self.layer_stack = layer_stack
        self.model_dim = _ops.Dimension("d_model", d_model)
        self.input_vocab_dim = _ops.Dimension("vocab", input_vocab_size)
        self.output_vocab_dim = (None if output_vocab_size is None
                                 else _ops.Dimension("vocab", output_vocab_size))
        self.autoregressive = autoregressive
        self.max_length_dim = _ops.Dimension("max_length", max_length)
        self.z_loss = z_loss
        self.name = name
        self.positional_embedding = positional_embedding

    def _variable(self, mesh, what, dims, stddev, variable_dtype):
        return _layers.get_or_create_variable(
            mesh, self.name + "/" + what, _ops.Shape(dims), _ops.Initializer.normal(0.0, stddev),
            dtype=variable_dtype)

    def call_simple(self, inputs, targets=None, compute_loss=False, mode=_TRAIN,
                    variable_dtype=None, sequence_id=None, position=None):
        """inputs: int32 [batch..., length] ids (0 is padding). Returns
        (logits, loss); loss is None unless compute_loss."""
        variable_dtype = variable_dtype or _ops.VariableDType(_ops.float32)
        mesh = inputs.mesh
        length_dim = inputs.shape.dims[-1]
        if length_dim.size > self.max_length_dim.size:
            raise ValueError("Unitransformer: %d positions, more than max_length %d"
                             % (length_dim.size, self.max_length_dim.size))
        if sequence_id is None:
            sequence_id = _ops.minimum(inputs, 1)
        if position is None:
            position = _ops.range(mesh, length_dim)
        table = self._variable(mesh, "embedding", [self.input_vocab_dim, self.model_dim], 1.0,
                               variable_dtype)
        x = _ops.gather(table, inputs, self.input_vocab_dim)
        if self.positional_embedding:
            positions = self._variable(mesh, "positional_embedding",
                                       [self.max_length_dim, self.model_dim], 1.0,
                                       variable_dtype)
            x = x + _ops.gather(positions, position, self.max_length_dim)
        context = Context(model=self, mesh=mesh, batch_dims=inputs.shape.dims[:-1],
                          length_dim=length_dim, variable_dtype=variable_dtype, mode=mode,
                          position=position, sequence_id=sequence_id, inputs=inputs)
        x = self.layer_stack.call(context, x)
        vocab = self.output_vocab_dim or self.input_vocab_dim
        out_table = self._variable(mesh, "logits", [self.model_dim, vocab],
                                   self.model_dim.size ** -0.5, variable_dtype)
        logits = _ops.einsum([x, out_table], reduced_dims=[self.model_dim])
        if not compute_loss:
            return logits, None
        if targets is None:
            raise ValueError("Unitransformer.call_simple: compute_loss needs targets")
        loss = _ops.softmax_cross_entropy_with_logits(logits, targets, vocab, z_loss=self.z_loss)
        weights = _ops.cast(_ops.not_equal(targets, 0), loss.dtype)
        loss = _ops.reduce_sum(loss * weights) / _ops.maximum(_ops.reduce_sum(weights), 1.0)
        return logits, loss
