// bind_layers.cc — mtf.layers: every layer of mtf/layers.h, with Mesh
// TensorFlow's argument names (dense(x, new_dims, reduced_dims=None,
// use_bias=True, activation=None, name=...)).
#include <pybind11/functional.h>

#include <variant>

#include "handles.h"

namespace mtf::python {
namespace {

using Activation = std::function<Tensor(const Tensor&)>;

layers::ConvOptions conv_options(const std::vector<int64_t>& strides, const std::string& padding,
                                 const std::vector<int64_t>& dilations, bool use_bias,
                                 const std::optional<Activation>& activation,
                                 const std::optional<Initializer>& initializer) {
  layers::ConvOptions o;
  o.strides = strides;
  o.padding = padding;
  o.dilations = dilations;
  o.use_bias = use_bias;
  if (activation) o.activation = *activation;
  if (initializer) {
    o.has_initializer = true;
    o.filter_initializer = *initializer;
  }
  return o;
}

// conv layers of a fixed signature (name, filter size as a list).
using ConvLayer = Tensor (*)(const Tensor&, const Dimension&, const std::vector<int64_t>&,
                             const std::string&, const layers::ConvOptions&);
void conv_layer(py::module_& l, const char* name, ConvLayer f) {
  l.def(
      name,
      [f](const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
          const std::vector<int64_t>& strides, const std::string& padding,
          const std::vector<int64_t>& dilations, bool use_bias,
          const std::optional<Activation>& activation,
          const std::optional<Initializer>& filter_initializer, const std::string& layer_name) {
        return f(
            x, output_dim, filter_size, layer_name,
            conv_options(strides, padding, dilations, use_bias, activation, filter_initializer));
      },
      py::arg("x"), py::arg("output_dim"), py::arg("filter_size"),
      py::arg("strides") = std::vector<int64_t>{}, py::arg("padding") = "SAME",
      py::arg("dilations") = std::vector<int64_t>{}, py::arg("use_bias") = true,
      py::arg("activation") = py::none(), py::arg("filter_initializer") = py::none(),
      py::arg("name") = name);
}

void bind_variables_and_dense(py::module_& l) {
  l.def(
      "get_or_create_variable",
      [](const Mesh& mesh, const std::string& name, const Shape& shape, Initializer initializer,
         std::variant<DType, VariableDType> dtype, bool trainable) {
        const VariableDType d = std::holds_alternative<DType>(dtype)
                                    ? VariableDType::of(std::get<DType>(dtype))
                                    : std::get<VariableDType>(dtype);
        return layers::get_or_create_variable(mesh, name, shape, initializer, d, trainable);
      },
      py::arg("mesh"), py::arg("name"), py::arg("shape"), py::arg("initializer"),
      py::arg("dtype") = float32, py::arg("trainable") = true);
  l.def("variance_scaling_initializer", &layers::variance_scaling, py::arg("reduced_dims"),
        py::arg("scale") = 1.0f);
  py::class_<layers::VarianceScaling>(l, "VarianceScalingInitializer",
                                      "Mesh TensorFlow's VarianceScalingInitializer: variance "
                                      "scale / fan_in, fan_out or fan_avg of the kernel.")
      .def(py::init([](float scale, const std::string& mode, const std::string& distribution) {
             layers::VarianceScaling v{scale, mode, distribution};
             v.for_kernel({}, {});  // the same ValueError now as at first use
             return v;
           }),
           py::arg("scale") = 1.0f, py::arg("mode") = "fan_in", py::arg("distribution") = "normal")
      .def(
          "__call__",
          [](const layers::VarianceScaling& v, const py::object& reduced_dims,
             const py::object& new_dims) {
            return v.for_kernel(dims_of(reduced_dims), dims_of(new_dims));
          },
          py::arg("reduced_dims"), py::arg("new_dims"),
          "The Initializer for a kernel reducing reduced_dims and making new_dims.")
      .def_readonly("scale", &layers::VarianceScaling::scale)
      .def_readonly("mode", &layers::VarianceScaling::mode)
      .def_readonly("distribution", &layers::VarianceScaling::distribution);
  l.def(
      "dense",
      [](const Tensor& x, const py::object& new_dims, const py::object& reduced_dims,
         const py::object& expert_dims, bool use_bias, const std::optional<Activation>& activation,
         DType master_dtype, DType slice_dtype, const std::optional<VariableDType>& variable_dtype,
         const py::object& kernel_initializer, const std::optional<Tensor>& kernel_weights,
         const std::string& name, const py::object& output_dim) {
        // new_dims, or output_dim as Mesh TensorFlow's older dense named it.
        if (new_dims.is_none() == output_dim.is_none())
          throw ValueError("dense: give new_dims (or output_dim), once");
        layers::DenseOptions o;
        o.use_bias = use_bias;
        if (activation) o.activation = *activation;
        if (py::isinstance<layers::VarianceScaling>(kernel_initializer)) {
          o.variance_scaling_options = kernel_initializer.cast<layers::VarianceScaling>();
        } else if (!kernel_initializer.is_none()) {
          o.has_initializer = true;
          o.kernel_initializer = kernel_initializer.cast<Initializer>();
        }
        o.expert_dims = dims_of(expert_dims);
        if (kernel_weights) o.kernel_weights = *kernel_weights;
        if (variable_dtype) {
          o.variable_dtype = *variable_dtype;
        } else if (master_dtype != float32 || slice_dtype != float32) {
          o.variable_dtype = VariableDType(master_dtype, slice_dtype, x.dtype());
        }
        return layers::dense(x, dims_of(new_dims.is_none() ? output_dim : new_dims),
                             dims_of(reduced_dims), name, o);
      },
      py::arg("x"), py::arg("new_dims") = py::none(), py::arg("reduced_dims") = py::none(),
      py::arg("expert_dims") = py::none(), py::arg("use_bias") = true,
      py::arg("activation") = py::none(), py::arg("master_dtype") = float32,
      py::arg("slice_dtype") = float32, py::arg("variable_dtype") = py::none(),
      py::arg("kernel_initializer") = py::none(), py::arg("kernel_weights") = py::none(),
      py::arg("name") = "dense", py::arg("output_dim") = py::none(),
      "einsum(x, kernel[expert_dims + reduced_dims + new_dims]) + bias; reduced_dims default: "
      "x's last. kernel_initializer: an Initializer or a VarianceScalingInitializer; "
      "kernel_weights: use this tensor as the kernel.");
  l.def(
      "separable_conv1d",
      [](const Tensor& x, const Dimension& output_dim, int min_relative_pos, int max_relative_pos,
         float depthwise_scale, float pointwise_scale, const std::string& name, bool use_bias,
         const std::vector<Tensor>& kernel_depth_weights) {
        return layers::separable_conv1d(x, output_dim, min_relative_pos, max_relative_pos, name,
                                        depthwise_scale, pointwise_scale, use_bias,
                                        kernel_depth_weights);
      },
      py::arg("x"), py::arg("output_dim"), py::arg("min_relative_pos") = -1,
      py::arg("max_relative_pos") = 1, py::arg("depthwise_filter_initializer_scale") = 1.0f,
      py::arg("pointwise_filter_initializer_scale") = 1.0f, py::arg("name") = "separable_conv1d",
      py::arg("use_bias") = true, py::arg("kernel_depth_weights") = std::vector<Tensor>{},
      "Mesh TensorFlow's separable_conv1d over x's last two dimensions (length, depth).");
}

void bind_convolutions_and_norms(py::module_& l) {
  conv_layer(l, "conv", &layers::conv);
  conv_layer(l, "conv2d", &layers::conv2d);
  conv_layer(l, "conv3d", &layers::conv3d);
  conv_layer(l, "conv_transpose", &layers::conv_transpose);
  conv_layer(l, "conv2d_transpose", &layers::conv2d_transpose);
  conv_layer(l, "conv3d_transpose", &layers::conv3d_transpose);
  l.def(
      "conv1d",
      [](const Tensor& x, const Dimension& output_dim, int64_t filter_size, int64_t stride,
         const std::string& padding, int64_t dilation, bool use_bias,
         const std::optional<Activation>& activation,
         const std::optional<Initializer>& filter_initializer, const std::string& name) {
        return layers::conv1d(
            x, output_dim, filter_size, name,
            conv_options({stride}, padding, {dilation}, use_bias, activation, filter_initializer));
      },
      py::arg("x"), py::arg("output_dim"), py::arg("filter_size") = 3, py::arg("stride") = 1,
      py::arg("padding") = "SAME", py::arg("dilation") = 1, py::arg("use_bias") = true,
      py::arg("activation") = py::none(), py::arg("filter_initializer") = py::none(),
      py::arg("name") = "conv1d");
  l.def("max_pool2d", &layers::max_pool2d, py::arg("x"),
        py::arg("ksize") = std::vector<int64_t>{2, 2});
  l.def("max_pool3d", &layers::max_pool3d, py::arg("x"),
        py::arg("ksize") = std::vector<int64_t>{2, 2, 2});
  l.def("avg_pool2d", &layers::avg_pool2d, py::arg("x"),
        py::arg("ksize") = std::vector<int64_t>{2, 2});
  l.def("avg_pool3d", &layers::avg_pool3d, py::arg("x"),
        py::arg("ksize") = std::vector<int64_t>{2, 2, 2});
  // Mesh TensorFlow's order: (x, dim, epsilon, name).
  l.def(
      "layer_norm",
      [](const Tensor& x, const DimRef& dim, float epsilon, const std::string& name) {
        return layers::layer_norm(x, dim, name, epsilon);
      },
      py::arg("x"), py::arg("dim"), py::arg("epsilon") = 1e-6f, py::arg("name") = "layer_norm");
  l.def(
      "rms_norm",
      [](const Tensor& x, const DimRef& dim, float epsilon, const std::string& name) {
        return layers::rms_norm(x, dim, name, epsilon);
      },
      py::arg("x"), py::arg("dim"), py::arg("epsilon") = 1e-6f, py::arg("name") = "rms_norm");
  l.def(
      "batch_norm",
      [](const Tensor& x, bool is_training, const py::object& reduced_dims_or_momentum,
         const std::optional<float>& momentum, const std::optional<float>& epsilon, bool init_zero,
         const std::optional<std::string>& name, const std::optional<int>& dims_idx_start,
         const std::optional<int>& dims_idx_end) {
        // Ours: (x, is_training, reduced_dims, momentum=0.99, epsilon=1e-3,
        // ...). Mesh TensorFlow's: (x, is_training, momentum, epsilon=1e-9,
        // dims_idx_start=0, dims_idx_end=-1, ...), normalizing over
        // x.shape.dims[dims_idx_start:dims_idx_end].
        const bool mtf_call = reduced_dims_or_momentum.is_none() ||
                              py::isinstance<py::float_>(reduced_dims_or_momentum) ||
                              py::isinstance<py::int_>(reduced_dims_or_momentum);
        std::vector<Dimension> reduced;
        float m = momentum.value_or(0.99f), eps = epsilon.value_or(1e-3f);
        if (mtf_call) {
          if (!reduced_dims_or_momentum.is_none()) {
            if (momentum) throw ValueError("batch_norm: momentum given twice");
            m = reduced_dims_or_momentum.cast<float>();
          }
          eps = epsilon.value_or(1e-9f);
          const auto& dims = x.shape().dims();
          const int n = static_cast<int>(dims.size());
          int b = dims_idx_start.value_or(0), e = dims_idx_end.value_or(-1);
          if (b < 0) b += n;
          if (e < 0) e += n;
          if (b < 0 || e > n || b > e)
            throw ValueError("batch_norm: dims_idx_start/dims_idx_end out of x's dimensions");
          reduced.assign(dims.begin() + b, dims.begin() + e);
        } else {
          if (dims_idx_start || dims_idx_end)
            throw ValueError("batch_norm: give reduced_dims or dims_idx_start/end, not both");
          reduced = dims_of(reduced_dims_or_momentum);
        }
        layers::BatchNorm bn = layers::batch_norm(x, is_training, reduced,
                                                  name.value_or("batch_norm"), m, eps, init_zero);
        return py::make_tuple(wrap(bn.output), wrap(bn.updates));
      },
      py::arg("x"), py::arg("is_training"), py::arg("reduced_dims") = py::none(),
      py::arg("momentum") = py::none(), py::arg("epsilon") = py::none(),
      py::arg("init_zero") = false, py::arg("name") = py::none(),
      py::arg("dims_idx_start") = py::none(), py::arg("dims_idx_end") = py::none(),
      "(output, update ops): run the updates with the training step. The third argument is "
      "reduced_dims (ours; momentum 0.99, epsilon 1e-3 by default) or momentum (Mesh "
      "TensorFlow's; epsilon 1e-9, dims_idx_start/end picking the normalized dimensions).");
}

void bind_embedding_and_dropout(py::module_& l) {
  l.def(
      "embedding",
      [](const Tensor& ids, const Dimension& vocab_dim, const Dimension& output_dim,
         std::optional<VariableDType> dtype, const std::string& name,
         const std::optional<Dimension>& ensemble_dim, float init_stddev) {
        return layers::embedding(ids, vocab_dim, output_dim, name, init_stddev,
                                 dtype.value_or(VariableDType()), ensemble_dim);
      },
      py::arg("indices"), py::arg("vocab_dim"), py::arg("output_dim"),
      py::arg("variable_dtype") = py::none(), py::arg("name") = "embedding",
      py::arg("ensemble_dim") = py::none(), py::arg("init_stddev") = 1.0f,
      "Rows of the table \"<name>/weights\" picked by int32 indices (Mesh TensorFlow's "
      "argument order).");
  l.def(
      "embedding_weights",
      [](const Mesh& mesh, const Dimension& vocab_dim, const Dimension& output_dim,
         std::optional<VariableDType> dtype, const std::string& name,
         const py::object& ensemble_dim, const std::optional<Initializer>& init) {
        return layers::embedding_weights(mesh, vocab_dim, output_dim,
                                         dtype.value_or(VariableDType()), name,
                                         dims_of(ensemble_dim), init);
      },
      py::arg("mesh"), py::arg("vocab_dim"), py::arg("output_dim"),
      py::arg("variable_dtype") = py::none(), py::arg("name") = "embedding",
      py::arg("ensemble_dim") = py::none(), py::arg("initializer") = py::none(),
      "The table embedding() reads: [ensemble_dim(s),] vocab_dim, output_dim (ensemble_dim: "
      "None, a Dimension or a list of them, as in Mesh TensorFlow).");
  l.def(
      "dropout",
      [](const Tensor& x, const py::object& is_training_or_keep_prob,
         std::optional<float> keep_prob, std::optional<float> rate,
         const std::optional<Shape>& noise_shape) {
        const DropoutArgs d = dropout_args(is_training_or_keep_prob, keep_prob, rate);
        if (!d.training) return x;
        return layers::dropout_if(x, d.keep.value_or(1.0f), noise_shape ? &*noise_shape : nullptr);
      },
      py::arg("x"), py::arg("is_training") = py::none(), py::arg("keep_prob") = py::none(),
      py::arg("rate") = py::none(), py::arg("noise_shape") = py::none(),
      "Dropout that is the identity when keep_prob is 1 or is_training is False.");
}

void bind_attention(py::module_& l) {
  l.def("attention_mask_autoregressive", &layers::attention_mask_autoregressive, py::arg("mesh"),
        py::arg("query_dim"), py::arg("memory_dim"));
  l.def("attention_mask_ignore_padding", &layers::attention_mask_ignore_padding,
        py::arg("memory_ids"));
  l.def("attention_mask_same_segment", &layers::attention_mask_same_segment,
        py::arg("query_segment"), py::arg("memory_segment"));
  l.def("relative_position_bucket", &layers::relative_position_bucket, py::arg("relative_position"),
        py::arg("bidirectional") = true, py::arg("num_buckets") = 32,
        py::arg("max_distance") = 128);
  l.def("relative_position_bias", &layers::relative_position_bias, py::arg("query_position"),
        py::arg("memory_position"), py::arg("heads_dim"), py::arg("bidirectional"),
        py::arg("name") = "relative_position_bias", py::arg("num_buckets") = 32,
        py::arg("max_distance") = 128);
  l.def(
      "dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
         const std::optional<Dimension>& kv_dim, const std::optional<Dimension>& memory_dim,
         float keep_prob, float dropout) {
        // Without the dimensions, Mesh TensorFlow's reading: q's last is the
        // key depth, k's second-to-last the memory length.
        const Shape &qs = q.shape(), &ks = k.shape();
        if ((!kv_dim && qs.ndims() < 1) || (!memory_dim && ks.ndims() < 2))
          throw ShapeError("dot_product_attention: q needs [..., depth_k], k [..., length, depth]");
        return layers::dot_product_attention(
            q, k, v, mask.value_or(Tensor()), kv_dim.value_or(qs[qs.ndims() - 1]),
            memory_dim.value_or(ks[ks.ndims() - 2]), keep_prob * (1.0f - dropout));
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"), py::arg("kv_dim") = py::none(),
      py::arg("memory_length_dim") = py::none(), py::arg("keep_prob") = 1.0f,
      py::arg("dropout") = 0.0f);
  l.def(
      "multihead_attention",
      [](const Tensor& query_antecedent, const std::optional<Tensor>& memory_or_none,
         const std::optional<Tensor>& mask, const Dimension& kv_dim, const Dimension& heads_dim,
         const py::object& is_training_or_memory_dim, float dropout,
         const std::optional<float>& dropout_keep_prob,
         const std::optional<Dimension>& memory_length_dim, const std::string& name) {
        // Mesh TensorFlow's (..., kv_channels, heads, is_training=True,
        // dropout=0.0, name=...) or ours (..., heads, memory_length_dim,
        // dropout_keep_prob=1.0, name=...): a Dimension in sixth place is
        // the memory length; without one it is memory_antecedent's
        // second-to-last dimension, as Mesh TensorFlow takes it.
        // No memory: self-attention over the query, its length renamed
        // "memory_length" (Mesh TensorFlow's rename_length_to_memory_length).
        Tensor memory_antecedent;
        if (memory_or_none) {
          memory_antecedent = *memory_or_none;
        } else {
          const Shape& qs = query_antecedent.shape();
          if (qs.ndims() < 2)
            throw ShapeError("multihead_attention: query " + query_antecedent.describe() +
                             " needs [..., length, channels]");
          memory_antecedent =
              rename_dimension(query_antecedent, qs[qs.ndims() - 2].name, "memory_length");
        }
        bool training = true;
        std::optional<Dimension> mem = memory_length_dim;
        if (py::isinstance<Dimension>(is_training_or_memory_dim)) {
          mem = is_training_or_memory_dim.cast<Dimension>();
        } else if (!is_training_or_memory_dim.is_none()) {
          training = is_training_or_memory_dim.cast<bool>();
        }
        if (!mem) {
          const Shape& ms = memory_antecedent.shape();
          if (ms.ndims() < 2)
            throw ShapeError("multihead_attention: memory_antecedent " +
                             memory_antecedent.describe() + " has no memory length dimension");
          mem = ms[ms.ndims() - 2];
        }
        float keep = dropout_keep_prob.value_or(1.0f - dropout);
        if (!training) keep = 1.0f;
        return layers::multihead_attention(query_antecedent, memory_antecedent,
                                           mask.value_or(Tensor()), {heads_dim, kv_dim, *mem}, name,
                                           keep);
      },
      py::arg("query_antecedent"), py::arg("memory_antecedent"), py::arg("mask"),
      py::arg("kv_channels"), py::arg("heads"), py::arg("is_training") = py::none(),
      py::arg("dropout") = 0.0f, py::arg("dropout_keep_prob") = py::none(),
      py::arg("memory_length_dim") = py::none(), py::arg("name") = "multihead_attention");
}

// Feed-forward blocks and losses.
void bind_feed_forward_and_losses(py::module_& l) {
  l.def("weights_nonzero", &weights_nonzero, py::arg("targets"), py::arg("dtype") = float32,
        "1 where targets is not 0 (Mesh TensorFlow's layers.weights_nonzero; also mtf.).");
  l.def("dense_relu_dense", &layers::dense_relu_dense, py::arg("x"), py::arg("hidden_channels"),
        py::arg("name") = "dense_relu_dense", py::arg("dropout_keep_prob") = 1.0f);
  l.def(
      "moe",
      [](const Tensor& x, const DimRef& group, const Dimension& experts, const Dimension& hidden,
         float capacity_factor, float loss_coef, const std::string& name) {
        layers::MoeOptions o{experts, hidden, capacity_factor, loss_coef};
        layers::MoeOutput out = layers::moe(x, group, name, o);
        return std::make_pair(out.y, out.loss);
      },
      py::arg("x"), py::arg("group_dim"), py::arg("experts_dim") = Dimension{"experts", 4},
      py::arg("hidden_dim") = Dimension{"expert_hidden", 256}, py::arg("capacity_factor") = 2.0f,
      py::arg("loss_coef") = 1e-2f, py::arg("name") = "moe",
      "Top-2 mixture of experts: (output, load-balancing loss to add to the training loss).");
  l.def("softmax_cross_entropy_with_logits", &softmax_cross_entropy_with_logits, py::arg("logits"),
        py::arg("targets"), py::arg("vocab_dim"), py::arg("z_loss") = 0.0f);
  l.def("sigmoid_cross_entropy_with_logits", &sigmoid_cross_entropy_with_logits, py::arg("logits"),
        py::arg("targets"),
        "Elementwise sigmoid cross-entropy of logits against targets of the same shape.");
  l.def("softmax_cross_entropy_mean", &layers::softmax_cross_entropy_mean, py::arg("logits"),
        py::arg("targets"), py::arg("vocab_dim"), py::arg("z_loss") = 0.0f,
        "Mean cross-entropy of logits against int32 targets.");
}

}  // namespace

void bind_layers(py::module_& m) {
  py::module_ l = m.def_submodule("layers", "Layers (Mesh TensorFlow's layers.py).");
  bind_variables_and_dense(l);
  bind_convolutions_and_norms(l);
  bind_embedding_and_dropout(l);
  bind_attention(l);
  bind_feed_forward_and_losses(l);
  bind_local_attention(m, l);
}

}  // namespace mtf::python
