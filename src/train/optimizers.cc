#include "mtf/optimizers.h"

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "mtf/ops.h"
#include "mtf/variables.h"
#include "ops/state_ops.h"
#include "train/step_rate.h"

namespace mtf {

std::vector<Operation*> Optimizer::minimize(const Tensor& loss) {
  const auto& vars = loss.graph().trainable_variables();
  if (vars.empty()) throw ValueError("minimize: the graph has no trainable variables");
  return apply_grads(gradients({loss}, vars), vars);
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

std::vector<Operation*> SgdOptimizer::apply_grads(const std::vector<Tensor>& grads,
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

std::vector<Operation*> MomentumOptimizer::apply_grads(const std::vector<Tensor>& grads,
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

std::vector<Operation*> AdamOptimizer::apply_grads(const std::vector<Tensor>& grads,
                                                   const std::vector<Tensor>& vars) {
  check_pairs("AdamOptimizer", grads, vars);
  if (vars.empty()) return {};
  const Mesh& mesh = vars[0].mesh();
  const train::StepRate sr = train::step_rate(mesh, name_, lr_);
  const Tensor& t = sr.step;
  // lr * sqrt(1 - beta2^t) / (1 - beta1^t)
  Tensor b1t = pow(constant(mesh, b1_), t);
  Tensor b2t = pow(constant(mesh, b2_), t);
  Tensor lr_t = sqrt(1.0f - b2t) / (1.0f - b1t) * sr.rate;
  std::vector<Operation*> updates{sr.count};
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& var = vars[i];
    const Tensor& g = grads[i];
    Tensor m = get_variable(mesh, var.op().name() + "/adam_m", var.shape(), Initializer::zeros(),
                            var.dtype(), false);
    Tensor v = get_variable(mesh, var.op().name() + "/adam_v", var.shape(), Initializer::zeros(),
                            var.dtype(), false);
    Tensor m_new = m * b1_ + g * (1.0f - b1_);
    Tensor v_new = v * b2_ + square(g) * (1.0f - b2_);
    updates.push_back(assign(m, m_new));
    updates.push_back(assign(v, v_new));
    // bfloat16 slots and slices: the step's float32 rate in their dtype.
    const Tensor rate = var.dtype() == lr_t.dtype() ? lr_t : cast(lr_t, var.dtype());
    updates.push_back(assign_sub(var, rate * m_new / (sqrt(v_new) + eps_)));
  }
  return updates;
}

}  // namespace mtf
