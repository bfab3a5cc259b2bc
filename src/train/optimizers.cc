#include "mtf/optimizers.h"

#include <cmath>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "mtf/ops.h"
#include "mtf/variables.h"
#include "ops/state_ops.h"
#include "train/name_patterns.h"
#include "train/step_rate.h"

namespace mtf {

std::vector<Operation*> Optimizer::minimize(const Tensor& loss) {
  const auto& vars = loss.graph().trainable_variables();
  if (vars.empty()) throw ValueError("minimize: the graph has no trainable variables");
  return apply_grads(gradients({loss}, vars), vars);
}

std::vector<Operation*> Optimizer::apply_grads(const std::vector<Tensor>& grads,
                                               const std::vector<Tensor>& variables) {
  last_grads_ = grads;
  gradient_norm_ = Tensor();
  bool any = false;
  for (const Tensor& g : grads) any = any || g.valid();
  if (clip_norm_ > 0 && any) {
    return update(clip_by_global_norm(grads, clip_norm_, &gradient_norm_), variables);
  }
  return update(grads, variables);
}

void Optimizer::set_clip_norm(float clip_norm) {
  if (!(clip_norm >= 0) || !std::isfinite(clip_norm)) {
    throw ValueError(detail::str_cat("clip norm ", clip_norm,
                                     ": give a finite norm > 0 to clip to, or 0 not to clip"));
  }
  clip_norm_ = clip_norm;
}

Tensor Optimizer::gradient_norm() {
  if (!gradient_norm_.valid()) {
    bool any = false;
    for (const Tensor& g : last_grads_) any = any || g.valid();
    if (!any) {
      throw ValueError(
          "gradient_norm: no gradients yet; call it after minimize() or apply_grads()");
    }
    gradient_norm_ = global_norm(last_grads_);
  }
  return gradient_norm_;
}

std::vector<Tensor> clip_by_global_norm(const std::vector<Tensor>& grads, float clip_norm,
                                        Tensor* norm) {
  if (!(clip_norm > 0) || !std::isfinite(clip_norm)) {
    throw ValueError(detail::str_cat("clip_by_global_norm: clip_norm is ", clip_norm,
                                     "; it must be a finite number > 0"));
  }
  const Tensor n = global_norm(grads);
  if (norm) *norm = n;
  const Tensor multiplier = clip_norm / maximum(n, constant(n.mesh(), clip_norm));
  std::vector<Tensor> out;
  out.reserve(grads.size());
  for (const Tensor& g : grads) {
    if (!g.valid()) {
      out.emplace_back();
      continue;
    }
    out.push_back(g * (g.dtype() == float32 ? multiplier : cast(multiplier, g.dtype())));
  }
  return out;
}

namespace {
void check_pairs(const char* who, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& vars) {
  if (grads.size() != vars.size()) {
    throw ValueError(
        detail::str_cat(who, ": ", grads.size(), " gradients for ", vars.size(), " variables"));
  }
}
}  // namespace

namespace train {
StepRate step_rate(const Mesh& mesh, const std::string& optimizer_name, const LearningRate& lr) {
  const Tensor variable =
      get_variable(mesh, optimizer_name + "/step", Shape(), Initializer::zeros(), float32, false);
  StepRate out;
  out.step = variable + 1.0f;
  out.rate = lr.build(out.step);
  out.count = assign(variable, out.step);
  return out;
}
}  // namespace train

namespace {
// var -= rate * delta, with the fused scaled update when the rate is a
// constant; a scheduled rate is cast to a bfloat16 variable's dtype.
Operation* subtract_scaled(const Tensor& var, const Tensor& delta, const LearningRate& lr,
                           const Tensor& rate) {
  if (lr.is_constant()) return ops::assign_sub_scaled(var, delta, lr.constant_value());
  const Tensor r = var.dtype() == rate.dtype() ? rate : cast(rate, var.dtype());
  return assign_sub(var, delta * r);
}
}  // namespace

std::vector<Operation*> SgdOptimizer::update(const std::vector<Tensor>& grads,
                                             const std::vector<Tensor>& vars) {
  check_pairs("SgdOptimizer", grads, vars);
  std::vector<Operation*> updates;
  Tensor rate;
  if (!lr_.is_constant() && !vars.empty()) {
    const train::StepRate sr = train::step_rate(vars[0].mesh(), name_, lr_);
    rate = sr.rate;
    updates.push_back(sr.count);
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    updates.push_back(subtract_scaled(vars[i], grads[i], lr_, rate));
  }
  return updates;
}

std::vector<Operation*> MomentumOptimizer::update(const std::vector<Tensor>& grads,
                                                  const std::vector<Tensor>& vars) {
  check_pairs("MomentumOptimizer", grads, vars);
  std::vector<Operation*> updates;
  Tensor rate;
  if (!lr_.is_constant() && !vars.empty()) {
    const train::StepRate sr = train::step_rate(vars[0].mesh(), name_, lr_);
    rate = sr.rate;
    updates.push_back(sr.count);
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& var = vars[i];
    Tensor v = get_variable(var.mesh(), var.op().name() + "/momentum", var.shape(),
                            Initializer::zeros(), var.dtype(), false);
    Tensor v_new = v * mom_ + grads[i];
    updates.push_back(assign(v, v_new));
    updates.push_back(subtract_scaled(var, v_new, lr_, rate));
  }
  return updates;
}

AdamOptimizer::AdamOptimizer(LearningRate learning_rate, float beta1, float beta2, float epsilon,
                             std::string name) {
  o_.learning_rate = std::move(learning_rate);
  o_.beta1 = beta1;
  o_.beta2 = beta2;
  o_.epsilon = epsilon;
  o_.name = std::move(name);
}

AdamWeightDecayOptimizer::AdamWeightDecayOptimizer(LearningRate learning_rate,
                                                   float weight_decay_rate, float beta1,
                                                   float beta2, float epsilon,
                                                   std::vector<std::string> exclude,
                                                   std::string name)
    : AdamOptimizer(AdamOptions{std::move(learning_rate), beta1, beta2, epsilon,
                                /*bias_correction=*/false, weight_decay_rate, std::move(exclude),
                                std::move(name)}) {}

std::vector<Operation*> AdamOptimizer::update(const std::vector<Tensor>& grads,
                                              const std::vector<Tensor>& vars) {
  check_pairs("AdamOptimizer", grads, vars);
  if (!(o_.beta1 >= 0 && o_.beta1 < 1 && o_.beta2 >= 0 && o_.beta2 < 1 && o_.epsilon >= 0 &&
        o_.weight_decay_rate >= 0 && std::isfinite(o_.weight_decay_rate))) {
    throw ValueError(detail::str_cat(o_.name, ": need 0 <= beta1, beta2 < 1 (got ", o_.beta1, ", ",
                                     o_.beta2, "), epsilon >= 0 (", o_.epsilon,
                                     ") and a finite weight_decay_rate >= 0 (",
                                     o_.weight_decay_rate, ")"));
  }
  const train::NamePatterns undecayed(o_.exclude_from_weight_decay,
                                      o_.name + ": exclude_from_weight_decay");
  if (vars.empty()) return {};
  const Mesh& mesh = vars[0].mesh();
  const train::StepRate sr = train::step_rate(mesh, o_.name, o_.learning_rate);
  const Tensor& t = sr.step;
  Tensor lr_t = sr.rate;
  if (o_.bias_correction) {  // lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    const Tensor b1t = pow(constant(mesh, o_.beta1), t);
    const Tensor b2t = pow(constant(mesh, o_.beta2), t);
    lr_t = sqrt(1.0f - b2t) / (1.0f - b1t) * sr.rate;
  }
  const Tensor decay = sr.rate * o_.weight_decay_rate;
  std::vector<Operation*> updates{sr.count};
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& var = vars[i];
    const Tensor& g = grads[i];
    const std::string& name = var.op().name();
    Tensor m =
        get_variable(mesh, name + "/adam_m", var.shape(), Initializer::zeros(), var.dtype(), false);
    Tensor v =
        get_variable(mesh, name + "/adam_v", var.shape(), Initializer::zeros(), var.dtype(), false);
    Tensor m_new = m * o_.beta1 + g * (1.0f - o_.beta1);
    Tensor v_new = v * o_.beta2 + square(g) * (1.0f - o_.beta2);
    updates.push_back(assign(m, m_new));
    updates.push_back(assign(v, v_new));
    // bfloat16 slots and slices: the step's float32 rates in their dtype.
    auto in_dtype = [&](const Tensor& r) {
      return var.dtype() == r.dtype() ? r : cast(r, var.dtype());
    };
    Tensor subtrahend = in_dtype(lr_t) * m_new / (sqrt(v_new) + o_.epsilon);
    if (o_.weight_decay_rate > 0 && !undecayed.matches(name))
      subtrahend = subtrahend + in_dtype(decay) * var;
    updates.push_back(assign_sub(var, subtrahend));
  }
  return updates;
}

}  // namespace mtf
