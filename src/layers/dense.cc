// Variables shared by name, dense, layer_norm, embedding, dense_relu_dense and
// the mean cross-entropy loss (include/mtf/layers.h).
#include <cmath>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor get_or_create_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                              Initializer initializer, DType dtype, bool trainable) {
  if (Operation* op = mesh.graph().find_operation(name)) {
    const Tensor existing = op->output(0);
    if (!is_variable(existing)) {
      throw ValueError(detail::str_cat("layers: \"", name,
                                       "\" names an op that is not a variable; give the layer "
                                       "another name"));
    }
    if (existing.shape() != shape || existing.dtype() != dtype) {
      throw ShapeError(detail::str_cat("layers: variable \"", name, "\" exists as ",
                                       existing.describe(), " but the layer asks for ",
                                       shape.to_string(), " ", dtype_name(dtype),
                                       "; a reused layer name must keep its shape"));
    }
    return existing;
  }
  return get_variable(mesh, name, shape, initializer, dtype, trainable);
}

Initializer variance_scaling(const std::vector<Dimension>& reduced, float scale) {
  double fan_in = 1;
  for (const Dimension& d : reduced) fan_in *= static_cast<double>(d.size);
  return Initializer::normal(0.0f, static_cast<float>(std::sqrt(scale / std::max(1.0, fan_in))));
}

Tensor dense(const Tensor& x, const std::vector<Dimension>& new_dims,
             const std::vector<Dimension>& reduced_dims, const std::string& name,
             const DenseOptions& options) {
  std::vector<Dimension> reduced = reduced_dims;
  if (reduced.empty()) {
    if (x.shape().empty()) throw ShapeError("dense \"" + name + "\": input is a scalar");
    reduced.push_back(x.shape()[x.shape().ndims() - 1]);
  }
  for (const Dimension& d : reduced) {
    if (!x.shape().contains(d)) {
      throw ShapeError(detail::str_cat("dense \"", name, "\": reduced dimension ", d.to_string(),
                                       " is not in the input ", x.describe()));
    }
  }
  for (const Dimension& d : new_dims) {
    if (x.shape().contains(d.name) &&
        std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
      throw ShapeError(detail::str_cat("dense \"", name, "\": new dimension \"", d.name,
                                       "\" is already in the input ", x.describe(),
                                       " and not reduced; rename one of them"));
    }
  }
  std::vector<Dimension> kernel_dims = reduced;
  kernel_dims.insert(kernel_dims.end(), new_dims.begin(), new_dims.end());
  const Initializer init =
      options.has_initializer ? options.kernel_initializer : variance_scaling(reduced);
  const Tensor kernel =
      get_or_create_variable(x.mesh(), name + "/kernel", Shape(kernel_dims), init, x.dtype());
  std::vector<Dimension> out_dims = x.shape().minus(Shape(reduced)).dims();
  out_dims.insert(out_dims.end(), new_dims.begin(), new_dims.end());
  Tensor y = einsum({x, kernel}, Shape(out_dims), name + "/einsum");
  if (options.use_bias) {
    y = y + get_or_create_variable(x.mesh(), name + "/bias", Shape(new_dims), Initializer::zeros(),
                                   x.dtype());
  }
  if (options.activation) y = options.activation(y);
  return y;
}

Tensor dense(const Tensor& x, const Dimension& new_dim, const std::string& name,
             const DenseOptions& options) {
  return dense(x, {new_dim}, {}, name, options);
}

Tensor layer_norm(const Tensor& x, const Dimension& dim, const std::string& name, float epsilon) {
  if (!x.shape().contains(dim)) {
    throw ShapeError(detail::str_cat("layer_norm \"", name, "\": dimension ", dim.to_string(),
                                     " is not in the input ", x.describe()));
  }
  const Tensor scale =
      get_or_create_variable(x.mesh(), name + "/scale", Shape({dim}), Initializer::ones());
  const Tensor bias =
      get_or_create_variable(x.mesh(), name + "/bias", Shape({dim}), Initializer::zeros());
  const Tensor centered = x - reduce_mean(x, dim);
  const Tensor variance = reduce_mean(square(centered), dim);
  return centered * rsqrt(variance + epsilon) * scale + bias;
}

BatchNorm batch_norm(const Tensor& x, bool is_training, const std::vector<Dimension>& reduced_dims,
                     const std::string& name, float momentum, float epsilon, bool init_zero) {
  if (reduced_dims.empty()) {
    throw ShapeError("batch_norm \"" + name + "\": name the dimensions to normalize over");
  }
  for (const Dimension& d : reduced_dims) {
    if (!x.shape().contains(d)) {
      throw ShapeError(detail::str_cat("batch_norm \"", name, "\": dimension ", d.to_string(),
                                       " is not in the input ", x.describe()));
    }
  }
  const Shape stats = x.shape().minus(Shape(reduced_dims));
  const Mesh& mesh = x.mesh();
  const Tensor moving_mean = get_or_create_variable(mesh, name + "/moving_mean", stats,
                                                    Initializer::zeros(), float32, false);
  const Tensor moving_var = get_or_create_variable(mesh, name + "/moving_variance", stats,
                                                   Initializer::ones(), float32, false);
  const Tensor scale = get_or_create_variable(
      mesh, name + "/scale", stats, init_zero ? Initializer::zeros() : Initializer::ones());
  const Tensor bias = get_or_create_variable(mesh, name + "/bias", stats, Initializer::zeros());
  BatchNorm r;
  Tensor mean = moving_mean, variance = moving_var;
  if (is_training) {
    mean = reduce_mean(x, stats);
    variance = reduce_mean(square(x - mean), stats);
    r.updates.push_back(assign(moving_mean, moving_mean * momentum + mean * (1.0f - momentum)));
    r.updates.push_back(assign(moving_var, moving_var * momentum + variance * (1.0f - momentum)));
  }
  r.output = (x - mean) * rsqrt(variance + epsilon) * scale + bias;
  return r;
}

Tensor embedding(const Tensor& ids, const Dimension& vocab_dim, const Dimension& output_dim,
                 const std::string& name, float init_stddev) {
  const Tensor table =
      get_or_create_variable(ids.mesh(), name + "/weights", Shape({vocab_dim, output_dim}),
                             Initializer::normal(0.0f, init_stddev));
  return gather(table, ids, vocab_dim);
}

Tensor dropout_if(const Tensor& x, float keep_prob, const Shape* noise_shape) {
  if (keep_prob >= 1.0f) return x;
  if (!(keep_prob > 0.0f)) {
    throw ValueError(detail::str_cat("dropout: keep_prob ", keep_prob,
                                     " must be in (0, 1]; 1 turns dropout off"));
  }
  return dropout(x, keep_prob, 0, noise_shape);
}

Tensor dense_relu_dense(const Tensor& x, const Dimension& hidden_dim, const std::string& name,
                        float keep_prob) {
  if (x.shape().empty()) throw ShapeError("dense_relu_dense \"" + name + "\": input is a scalar");
  const Dimension io = x.shape()[x.shape().ndims() - 1];
  DenseOptions relu_no_bias;
  relu_no_bias.use_bias = false;
  relu_no_bias.activation = [](const Tensor& t) { return relu(t); };
  Tensor h = dense(x, {hidden_dim}, {io}, name + "/wi", relu_no_bias);
  h = dropout_if(h, keep_prob);
  DenseOptions no_bias;
  no_bias.use_bias = false;
  return dense(h, {io}, {hidden_dim}, name + "/wo", no_bias);
}

Tensor softmax_cross_entropy_mean(const Tensor& logits, const Tensor& targets,
                                  const Dimension& vocab_dim, float z_loss) {
  if (targets.dtype() != int32) {
    throw DTypeError(detail::str_cat("softmax_cross_entropy_mean: targets ", targets.describe(),
                                     " must be int32 class ids"));
  }
  const Tensor per_example =
      softmax_cross_entropy_with_logits(logits, one_hot(targets, vocab_dim), vocab_dim, z_loss);
  return reduce_mean(per_example);
}

}  // namespace mtf::layers
