// Mesh TensorFlow's activations, likes and sigmoid cross-entropy, composed of
// the elementwise ops (include/mtf/ops.h): their gradients, fusion and
// lowering on every layout are those of the pieces.
#include <cmath>

#include "mtf/errors.h"
#include "mtf/ops.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

// exp(x) - 1 for x <= 0, and 0 where x > 0 — exp of large positives never
// runs, so the branch not taken cannot put inf * 0 into a gradient.
Tensor exp_minus_one_below_zero(const Tensor& x) {
  return exp(minimum(x, ops::scalar_like(x, 0.0f))) - 1.0f;
}

void require_float_input(const char* op, const Tensor& x) {
  if (!x.valid()) throw ValueError(std::string(op) + ": the input is an invalid mtf::Tensor");
  ops::require_float(op, x);
}

}  // namespace

Tensor swish(const Tensor& x, const std::string& name) {
  require_float_input("swish", x);
  const OriginScope origin = ops::made_by(name.empty() ? "swish" : "swish \"" + name + "\"", x);
  return x * sigmoid(x);
}

Tensor elu(const Tensor& x, const std::string& name) {
  require_float_input("elu", x);
  const OriginScope origin = ops::made_by(name.empty() ? "elu" : "elu \"" + name + "\"", x);
  return where(greater(x, ops::scalar_like(x, 0.0f)), x, exp_minus_one_below_zero(x));
}

Tensor selu(const Tensor& x, const std::string& name) {
  // The constants of Klambauer et al. (2017), as TensorFlow's selu.
  constexpr float kAlpha = 1.6732632423543772f, kScale = 1.0507009873554805f;
  require_float_input("selu", x);
  const OriginScope origin = ops::made_by(name.empty() ? "selu" : "selu \"" + name + "\"", x);
  return kScale *
         where(greater(x, ops::scalar_like(x, 0.0f)), x, kAlpha * exp_minus_one_below_zero(x));
}

Tensor leaky_relu(const Tensor& x, float alpha, const std::string& name) {
  require_float_input("leaky_relu", x);
  if (!(alpha >= 0.0f && alpha <= 1.0f)) {
    throw ValueError(detail::str_cat("leaky_relu: alpha ", alpha,
                                     " is outside [0, 1] (max(x, alpha * x) is leaky ReLU only "
                                     "there; Mesh TensorFlow's default is 0.2)"));
  }
  const OriginScope origin =
      ops::made_by(name.empty() ? "leaky_relu" : "leaky_relu \"" + name + "\"", x);
  return maximum(x, x * alpha);
}

Tensor zeros_like(const Tensor& x) {
  if (!x.valid()) throw ValueError("zeros_like: the input is an invalid mtf::Tensor");
  return zeros(x.mesh(), x.shape(), x.dtype());
}

Tensor ones_like(const Tensor& x) {
  if (!x.valid()) throw ValueError("ones_like: the input is an invalid mtf::Tensor");
  return ones(x.mesh(), x.shape(), x.dtype());
}

Tensor sigmoid_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets) {
  require_float_input("sigmoid_cross_entropy_with_logits", logits);
  if (!targets.valid())
    throw ValueError("sigmoid_cross_entropy_with_logits: targets is an invalid mtf::Tensor");
  if (!logits.shape().same_dims_as(targets.shape())) {
    throw ShapeError("sigmoid_cross_entropy_with_logits: logits " + logits.describe() +
                     " and targets " + targets.describe() + " must have the same dimensions");
  }
  const OriginScope origin = ops::made_by("sigmoid_cross_entropy_with_logits", logits);
  const Tensor z = targets.dtype() == logits.dtype() ? targets : cast(targets, logits.dtype());
  return relu(logits) - logits * z + softplus(-abs(logits));
}

}  // namespace mtf
