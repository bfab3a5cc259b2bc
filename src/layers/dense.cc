// dense, dense_relu_dense and dropout_if (include/mtf/layers.h).
#include <algorithm>
#include <cmath>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

namespace {

// The dense layer's dimension checks: every reduced and expert dimension is
// x's, no dimension is both, and a new one is not already in x unreduced.
void check_dense_dims(const Tensor& x, const std::vector<Dimension>& new_dims,
                      const std::vector<Dimension>& reduced, const std::vector<Dimension>& experts,
                      const std::string& name) {
  for (const auto* group : {&reduced, &experts}) {
    for (const Dimension& d : *group) {
      if (!x.shape().contains(d)) {
        throw ShapeError(
            detail::str_cat("dense \"", name, "\": ", group == &reduced ? "reduced" : "expert",
                            " dimension ", d.to_string(), " is not in the input ", x.describe()));
      }
    }
  }
  for (const Dimension& d : experts) {
    if (std::find(reduced.begin(), reduced.end(), d) != reduced.end()) {
      throw ShapeError(detail::str_cat("dense \"", name, "\": ", d.to_string(),
                                       " is both an expert and a reduced dimension"));
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
}

}  // namespace

Initializer VarianceScaling::for_kernel(const std::vector<Dimension>& reduced,
                                        const std::vector<Dimension>& new_dims) const {
  double fan_in = 1, fan_out = 1;
  for (const Dimension& d : reduced) fan_in *= static_cast<double>(d.size);
  for (const Dimension& d : new_dims) fan_out *= static_cast<double>(d.size);
  double fan = 0;
  if (mode == "fan_in") {
    fan = fan_in;
  } else if (mode == "fan_out") {
    fan = fan_out;
  } else if (mode == "fan_avg") {
    fan = (fan_in + fan_out) / 2;
  } else {
    throw ValueError("VarianceScaling: mode \"" + mode + "\" is not fan_in, fan_out or fan_avg");
  }
  if (!(scale > 0.0f)) {
    throw ValueError(detail::str_cat("VarianceScaling: scale ", scale, " must be > 0"));
  }
  const double variance = scale / std::max(1.0, fan);
  if (distribution == "normal" || distribution == "truncated_normal") {
    // The standard deviation of a unit normal cut at +-2.
    constexpr double kTruncatedStddev = 0.87962566103423978;
    return Initializer::truncated_normal(
        static_cast<float>(std::sqrt(variance) / kTruncatedStddev));
  }
  if (distribution == "untruncated_normal")
    return Initializer::normal(0.0f, static_cast<float>(std::sqrt(variance)));
  if (distribution == "uniform") {
    const float limit = static_cast<float>(std::sqrt(3.0 * variance));
    return Initializer::uniform(-limit, limit);
  }
  throw ValueError("VarianceScaling: distribution \"" + distribution +
                   "\" is not normal, truncated_normal, untruncated_normal or uniform");
}

Tensor dense(const Tensor& x, const std::vector<Dimension>& new_dims,
             const std::vector<Dimension>& reduced_dims, const std::string& name,
             const DenseOptions& options) {
  const OriginScope origin = ops::made_by("layers::dense \"" + name + "\"", x);
  std::vector<Dimension> reduced = reduced_dims;
  if (reduced.empty()) {
    if (x.shape().empty()) throw ShapeError("dense \"" + name + "\": input is a scalar");
    reduced.push_back(x.shape()[x.shape().ndims() - 1]);
  }
  const std::vector<Dimension>& experts = options.expert_dims;
  check_dense_dims(x, new_dims, reduced, experts, name);
  std::vector<Dimension> kernel_dims = experts;
  kernel_dims.insert(kernel_dims.end(), reduced.begin(), reduced.end());
  kernel_dims.insert(kernel_dims.end(), new_dims.begin(), new_dims.end());
  const VariableDType vd = options.variable_dtype.value_or(variable_dtype_for(x));
  Tensor kernel = options.kernel_weights;
  if (kernel.valid()) {
    if (!kernel.shape().same_dims_as(Shape(kernel_dims))) {
      throw ShapeError("dense \"" + name + "\": kernel_weights " + kernel.describe() +
                       " must have the dimensions " + Shape(kernel_dims).to_string() +
                       " (expert, reduced and new dimensions)");
    }
  } else {
    const Initializer init =
        options.has_initializer
            ? options.kernel_initializer
            : (options.variance_scaling_options
                   ? options.variance_scaling_options->for_kernel(reduced, new_dims)
                   : variance_scaling(reduced));
    kernel = get_or_create_variable(x.mesh(), name + "/kernel", Shape(kernel_dims), init, vd);
  }
  std::vector<Dimension> out_dims = x.shape().minus(Shape(reduced)).dims();
  out_dims.insert(out_dims.end(), new_dims.begin(), new_dims.end());
  Tensor y = einsum({x, kernel}, Shape(out_dims), name + "/einsum");
  if (options.use_bias) {
    std::vector<Dimension> bias_dims = experts;
    bias_dims.insert(bias_dims.end(), new_dims.begin(), new_dims.end());
    y = y + get_or_create_variable(x.mesh(), name + "/bias", Shape(bias_dims), Initializer::zeros(),
                                   vd);
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
