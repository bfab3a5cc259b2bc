// layer_norm and batch_norm (include/mtf/layers.h).
#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor layer_norm(const Tensor& x, const DimRef& ref, const std::string& name, float epsilon) {
  const OriginScope origin = ops::made_by("layers::layer_norm \"" + name + "\"", x);
  const Dimension dim = ops::dim_of("layer_norm \"" + name + "\"", x, ref);
  const VariableDType vd = variable_dtype_for(x);
  const Tensor scale =
      get_or_create_variable(x.mesh(), name + "/scale", Shape({dim}), Initializer::ones(), vd);
  const Tensor bias =
      get_or_create_variable(x.mesh(), name + "/bias", Shape({dim}), Initializer::zeros(), vd);
  if (x.dtype() == bfloat16) {
    // The moments in float32, the elementwise steps in bfloat16, as in Mesh
    // TensorFlow; the normalization's gradient written by hand, so the
    // backward pass keeps only its bfloat16 result and per-row factor (and
    // one kernel runs each where the layout leaves `dim` whole).
    return ops::normalize_rows(x, dim, epsilon) * scale + bias;
  }
  const Tensor centered = x - reduce_mean(x, dim);
  const Tensor variance = reduce_mean(square(centered), dim);
  return centered * rsqrt(variance + epsilon) * scale + bias;
}

Tensor rms_norm(const Tensor& x, const DimRef& ref, const std::string& name, float epsilon) {
  const OriginScope origin = ops::made_by("layers::rms_norm \"" + name + "\"", x);
  const Dimension dim = ops::dim_of("rms_norm \"" + name + "\"", x, ref);
  const Tensor scale = get_or_create_variable(x.mesh(), name + "/scale", Shape({dim}),
                                              Initializer::ones(), variable_dtype_for(x));
  if (x.dtype() == bfloat16) {
    // The mean square in float32 (of bfloat16 squares, whose gradient reads
    // x itself), the scaling in bfloat16.
    const Tensor mean_square = reduce_mean(cast(square(x), float32), dim);
    return x * cast(rsqrt(mean_square + epsilon), bfloat16) * scale;
  }
  return x * rsqrt(reduce_mean(square(x), dim) + epsilon) * scale;
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

}  // namespace mtf::layers
