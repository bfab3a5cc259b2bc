// dense, dense_relu_dense and dropout_if (include/mtf/layers.h).
#include <algorithm>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor dense(const Tensor& x, const std::vector<Dimension>& new_dims,
             const std::vector<Dimension>& reduced_dims, const std::string& name,
             const DenseOptions& options) {
  const OriginScope origin = ops::made_by("layers::dense \"" + name + "\"", x);
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
  const Tensor kernel = get_or_create_variable(x.mesh(), name + "/kernel", Shape(kernel_dims), init,
                                               variable_dtype_for(x));
  std::vector<Dimension> out_dims = x.shape().minus(Shape(reduced)).dims();
  out_dims.insert(out_dims.end(), new_dims.begin(), new_dims.end());
  Tensor y = einsum({x, kernel}, Shape(out_dims), name + "/einsum");
  if (options.use_bias) {
    y = y + get_or_create_variable(x.mesh(), name + "/bias", Shape(new_dims), Initializer::zeros(),
                                   variable_dtype_for(x));
  }
  if (options.activation) y = options.activation(y);
  return y;
}

Tensor dense(const Tensor& x, const Dimension& new_dim, const std::string& name,
             const DenseOptions& options) {
  return dense(x, {new_dim}, {}, name, options);
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
  const OriginScope origin = ops::made_by("layers::dense_relu_dense \"" + name + "\"", x);
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

}  // namespace mtf::layers
