// Adafactor (include/mtf/optimizers.h), after Mesh TensorFlow's optimize.py.
#include <algorithm>
#include <string>

#include "mtf/errors.h"
#include "mtf/ops.h"
#include "mtf/optimizers.h"
#include "mtf/variables.h"
#include "ops/op_util.h"
#include "train/name_patterns.h"
#include "train/step_rate.h"

namespace mtf {
namespace {
// The root mean square of the product of `factors` (broadcast into the
// first's shape), from one pass over the first.
Tensor rms_of(const std::vector<Tensor>& factors) {
  const double n = static_cast<double>(factors[0].shape().num_elements());
  return sqrt(reduce_sum_of_squares(factors, Shape()) * static_cast<float>(1.0 / n));
}

// How fast the second moments forget (AdafactorOptions::decay_rate): its
// text read once, then the decay at a step as a graph value.
struct DecayRate {
  enum class Kind { kPow, kAdam, kConstant } kind = Kind::kPow;
  float value = 0.8f;

  static DecayRate parse(const std::string& text, float decay_exponent) {
    DecayRate d;
    if (text.empty()) {
      d.value = decay_exponent;
    } else if (!parse_call(text, "pow(", &d.value) && !parse_call(text, "adam(", &d.value) &&
               !parse_number(text, &d.value)) {
      fail(text, "is not \"pow(E)\", \"adam(B)\" or a number");
    } else {
      d.kind = text.rfind("pow(", 0) == 0
                   ? Kind::kPow
                   : (text.rfind("adam(", 0) == 0 ? Kind::kAdam : Kind::kConstant);
    }
    if (d.kind == Kind::kPow && !(d.value > 0 && d.value <= 1))
      fail(text, detail::str_cat("needs an exponent in (0, 1], not ", d.value));
    if (d.kind != Kind::kPow && !(d.value >= 0 && d.value < 1))
      fail(text, detail::str_cat("needs a rate in [0, 1), not ", d.value));
    return d;
  }

  Tensor at(const Tensor& step) const {
    const Mesh& mesh = step.mesh();
    switch (kind) {
      case Kind::kPow:  // 1 - step^-E: 0 on the first step
        return 1.0f - pow(step, constant(mesh, -value));
      case Kind::kAdam: {  // B (1 - B^(step-1)) / (1 - B^step)
        const Tensor b = constant(mesh, value);
        return value * (1.0f - pow(b, step - 1.0f)) / (1.0f - pow(b, step));
      }
      case Kind::kConstant:
        break;
    }
    return constant(mesh, value);
  }

 private:
  [[noreturn]] static void fail(const std::string& text, const std::string& why) {
    throw ValueError("AdafactorOptimizer: decay_rate \"" + text + "\" " + why +
                     " (\"pow(0.8)\" is Mesh TensorFlow's default, \"adam(0.999)\" Adam's "
                     "bias-corrected beta2, \"0.99\" a constant)");
  }
  static bool parse_number(const std::string& s, float* out) {
    size_t used = 0;
    try {
      *out = std::stof(s, &used);
    } catch (const std::exception&) {
      return false;
    }
    return used == s.size();
  }
  static bool parse_call(const std::string& s, const std::string& head, float* out) {
    if (s.rfind(head, 0) != 0 || s.back() != ')') return false;
    return parse_number(s.substr(head.size(), s.size() - head.size() - 1), out);
  }
};
// The tensor whose values a float32 gradient holds: a bfloat16 gradient
// widened by a cast (the gradient of a float32 master read as bfloat16) is
// read as the bfloat16 tensor itself — the same values, no float32 copy.
Tensor widened_from(const Tensor& g) {
  const Operation& op = g.op();
  if (op.type() == "cast" && op.inputs().size() == 1 && op.inputs()[0].dtype() == bfloat16)
    return op.inputs()[0];
  return g;
}

}  // namespace

LearningRate AdafactorOptions::effective_learning_rate() const {
  if (!learning_rate.is_constant() || learning_rate.constant_value() != 0) return learning_rate;
  return LearningRate(multiply_by_parameter_scale ? "rsqrt(10000)" : "0.05*rsqrt(10000)");
}

std::vector<Dimension> AdafactorOptimizer::factored_dims(const Shape& shape) const {
  if (!o_.factored || shape.ndims() < 2) return {};
  std::vector<Dimension> dims = shape.dims();
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dimension& a, const Dimension& b) { return a.size > b.size; });
  if (dims[1].size < o_.min_dim_size_to_factor) return {};
  return {dims[0], dims[1]};
}

std::vector<Operation*> AdafactorOptimizer::update(const std::vector<Tensor>& grads,
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
  const DecayRate decay_rate = DecayRate::parse(o_.decay_rate, o_.decay_exponent);
  const train::NamePatterns unscaled(o_.exclude_from_parameter_scale,
                                     "AdafactorOptimizer: exclude_from_parameter_scale");
  if (vars.empty()) return {};
  const Mesh& mesh = vars[0].mesh();
  const train::StepRate sr = train::step_rate(mesh, o_.name, o_.effective_learning_rate());
  const Tensor& step_plus_one = sr.step;
  std::vector<Operation*> updates{sr.count};
  // By default decay = 1 - step^-exponent (step counted from 1): 0 on the
  // first step, so the first estimate is that step's squared gradient.
  const Tensor decay = decay_rate.at(step_plus_one);
  const Tensor mixing = 1.0f - decay;
  const Tensor& lr = sr.rate;
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
    const std::vector<Dimension> fd = factored_dims(var.shape());
    // The update is g times `factors` (broadcast), clipped and scaled. Its
    // statistics come from reduce_sum_of_squares, one pass over g (or var)
    // each: neither g^2 nor the update's square is stored.
    std::vector<Tensor> factors{widened_from(g)};
    if (!fd.empty()) {
      // Factored second moments: the row and column means of g^2 + eps1.
      const Shape vr_shape = var.shape().minus(Shape({fd[0]}));
      const Shape vc_shape = var.shape().minus(Shape({fd[1]}));
      const Tensor vr = get_variable(mesh, vname + "/adafactor_vr", vr_shape, Initializer::zeros(),
                                     float32, false);
      const Tensor vc = get_variable(mesh, vname + "/adafactor_vc", vc_shape, Initializer::zeros(),
                                     float32, false);
      const Tensor row_mean =
          reduce_sum_of_squares({factors[0]}, vr_shape) * (1.0f / fd[0].size) + o_.epsilon1;
      const Tensor col_mean =
          reduce_sum_of_squares({factors[0]}, vc_shape) * (1.0f / fd[1].size) + o_.epsilon1;
      const Tensor new_vr = vr * decay + row_mean * mixing;
      const Tensor new_vc = vc * decay + col_mean * mixing;
      updates.push_back(assign(vr, new_vr));
      updates.push_back(assign(vc, new_vc));
      factors.push_back(rsqrt(new_vr / reduce_mean(new_vr, fd[1])));  // the row factor
      factors.push_back(rsqrt(new_vc));                               // the column factor
    } else {
      const Tensor v = get_variable(mesh, vname + "/adafactor_v", var.shape(), Initializer::zeros(),
                                    float32, false);
      const Tensor new_v = v * decay + (square(g) + o_.epsilon1) * mixing;
      updates.push_back(assign(v, new_v));
      factors.push_back(rsqrt(new_v));
    }
    // Clipping and the parameter scale divide and multiply the whole
    // update: one scalar.
    Tensor scale = lr;
    if (o_.multiply_by_parameter_scale && !unscaled.matches(vname)) {
      scale = maximum(rms_of({var}), constant(mesh, o_.epsilon2)) * lr;
    }
    if (o_.clipping_threshold > 0) {
      scale = scale / maximum(constant(mesh, 1.0f), rms_of(factors) / o_.clipping_threshold);
    }
    Tensor x = g;
    for (size_t f = 1; f < factors.size(); ++f) x = x * factors[f];
    Tensor subtrahend = x * scale;
    if (o_.beta1 > 0) {
      const Tensor m = get_variable(mesh, vname + "/adafactor_m", var.shape(), Initializer::zeros(),
                                    float32, false);
      subtrahend = m * o_.beta1 + subtrahend * (1.0f - o_.beta1);
      updates.push_back(assign(m, subtrahend));
    }
    // var - subtrahend in the chain that makes the subtrahend, its result
    // taken over by the variable (assign keeps a fresh buffer): one pass
    // where assign_sub would read the subtrahend back.
    updates.push_back(narrow ? assign(stored, cast(var - subtrahend, bfloat16))
                             : assign(stored, var - subtrahend));
  }
  return updates;
}

}  // namespace mtf
