// Adafactor (include/mtf/optimizers.h), after Mesh TensorFlow's optimize.py.
#include <algorithm>

#include "mtf/errors.h"
#include "mtf/ops.h"
#include "mtf/optimizers.h"
#include "mtf/variables.h"
#include "ops/op_util.h"
#include "train/step_rate.h"

namespace mtf {
namespace {
Tensor reduce_rms(const Tensor& x) { return sqrt(reduce_mean(square(x))); }
}  // namespace

std::vector<Dimension> AdafactorOptimizer::factored_dims(const Shape& shape) const {
  if (!o_.factored || shape.ndims() < 2) return {};
  std::vector<Dimension> dims = shape.dims();
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dimension& a, const Dimension& b) { return a.size > b.size; });
  if (dims[1].size < o_.min_dim_size_to_factor) return {};
  return {dims[0], dims[1]};
}

std::vector<Operation*> AdafactorOptimizer::apply_grads(const std::vector<Tensor>& grads,
                                                        const std::vector<Tensor>& vars) {
  if (grads.size() != vars.size()) {
    throw ValueError(detail::str_cat("AdafactorOptimizer: ", grads.size(), " gradients for ",
                                     vars.size(), " variables"));
  }
  if (o_.beta1 < 0 || o_.beta1 >= 1 || o_.decay_exponent <= 0 || o_.decay_exponent > 1 ||
      o_.clipping_threshold < 0) {
    throw ValueError(detail::str_cat(
        "AdafactorOptimizer: need 0 <= beta1 < 1 (got ", o_.beta1, "), 0 < decay_exponent <= 1 (",
        o_.decay_exponent, ") and clipping_threshold >= 0 (", o_.clipping_threshold, ")"));
  }
  if (vars.empty()) return {};
  const Mesh& mesh = vars[0].mesh();
  // A constant 0 asks for Adafactor's own schedule, min(0.01, 1/sqrt(step)).
  const bool default_rate =
      o_.learning_rate.is_constant() && o_.learning_rate.constant_value() == 0;
  const train::StepRate sr = train::step_rate(
      mesh, o_.name, default_rate ? LearningRate("rsqrt(10000)") : o_.learning_rate);
  const Tensor& step_plus_one = sr.step;
  std::vector<Operation*> updates{sr.count};
  // decay = 1 - (step + 1)^-exponent: 0 on the first step, so the first
  // moment estimate is that step's squared gradient.
  const Tensor decay = 1.0f - pow(step_plus_one, constant(mesh, -o_.decay_exponent));
  const Tensor mixing = 1.0f - decay;
  Tensor lr = sr.rate;
  if (default_rate && !o_.multiply_by_parameter_scale) lr = lr * 0.05f;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& stored = vars[i];
    if (stored.dtype() != float32 && stored.dtype() != bfloat16) {
      throw DTypeError("AdafactorOptimizer: variable " + stored.describe() + " is stored as " +
                       dtype_name(stored.dtype()) + "; Adafactor updates float32 or bfloat16");
    }
    // A bfloat16 slice (Mesh TensorFlow's slice_dtype) is updated in float32
    // from its widened value, with float32 slots, and stored rounded once.
    const bool narrow = stored.dtype() == bfloat16;
    const Tensor var = narrow ? cast(stored, float32) : stored;
    const Tensor g = grads[i].dtype() == float32 ? grads[i] : cast(grads[i], float32);
    const std::string& vname = stored.op().name();
    const Tensor g2 = square(g) + o_.epsilon1;
    const std::vector<Dimension> fd = factored_dims(var.shape());
    Tensor x;
    if (!fd.empty()) {
      // vr keeps the mean over d0 (shape without d0), vc the mean over d1.
      const Shape vr_shape = var.shape().minus(Shape({fd[0]}));
      const Shape vc_shape = var.shape().minus(Shape({fd[1]}));
      const Tensor vr = get_variable(mesh, vname + "/adafactor_vr", vr_shape, Initializer::zeros(),
                                     float32, false);
      const Tensor vc = get_variable(mesh, vname + "/adafactor_vc", vc_shape, Initializer::zeros(),
                                     float32, false);
      const Tensor new_vr = vr * decay + reduce_mean(g2, vr_shape) * mixing;
      const Tensor new_vc = vc * decay + reduce_mean(g2, vc_shape) * mixing;
      updates.push_back(assign(vr, new_vr));
      updates.push_back(assign(vc, new_vc));
      const Tensor row_factor = rsqrt(new_vr / reduce_mean(new_vr, fd[1]));
      const Tensor col_factor = rsqrt(new_vc);
      x = g * row_factor * col_factor;
    } else {
      const Tensor v = get_variable(mesh, vname + "/adafactor_v", var.shape(), Initializer::zeros(),
                                    float32, false);
      const Tensor new_v = v * decay + g2 * mixing;
      updates.push_back(assign(v, new_v));
      x = g * rsqrt(new_v);
    }
    if (o_.clipping_threshold > 0) {
      x = x / maximum(constant(mesh, 1.0f), reduce_rms(x) / o_.clipping_threshold);
    }
    Tensor scale = lr;
    if (o_.multiply_by_parameter_scale) {
      scale = maximum(reduce_rms(var), constant(mesh, o_.epsilon2)) * lr;
    }
    Tensor subtrahend = x * scale;
    if (o_.beta1 > 0) {
      const Tensor m = get_variable(mesh, vname + "/adafactor_m", var.shape(), Initializer::zeros(),
                                    float32, false);
      subtrahend = m * o_.beta1 + subtrahend * (1.0f - o_.beta1);
      updates.push_back(assign(m, subtrahend));
    }
    updates.push_back(narrow ? assign(stored, cast(var - subtrahend, bfloat16))
                             : assign_sub(stored, subtrahend));
  }
  return updates;
}

}  // namespace mtf
