// state_ops.h — the variable and assignment ops, seen by the Session.
#pragma once

#include "mtf/graph.h"
#include "mtf/host_tensor.h"
#include "mtf/variables.h"

namespace mtf::ops {

class VariableOp : public Operation {
 public:
  VariableOp(const Mesh& mesh, const std::string& name, const Shape& shape, Initializer init,
             const VariableDType& dtype, bool trainable);
  void compute(KernelContext& ctx) const override;
  bool computes_bfloat16() const override { return true; }  // hands over the stored slice
  // The output is the slice dtype; checkpoints hold the master dtype.
  const VariableDType& variable_dtype() const { return dtype_; }
  // Gradients stop here; gradients() reports them at the value tensor.
  std::vector<Tensor> gradient(const std::vector<Tensor>&) const override { return {}; }
  double flops() const override { return 0; }
  bool trainable() const { return trainable_; }
  const Initializer& initializer() const { return init_; }
  // The initial value of the slice at `offset` (zeros: the whole variable).
  HostTensor initial_value(const Shape& slice_shape, const std::vector<int64_t>& offset) const;

 private:
  Initializer init_;
  VariableDType dtype_;
  bool trainable_;
  uint64_t seed_;
};

// The variable value tensor behind t: t itself, or the variable a cast t
// reads (get_variable's result in another activation dtype); else invalid.
Tensor variable_behind(const Tensor& t);

class AssignOp : public Operation {
 public:
  enum class Kind { kAssign, kAdd, kSub };
  // kAdd / kSub write var +- scale * value in one pass (scale applies to
  // float32 only; integer variables need scale 1).
  AssignOp(Kind kind, const Tensor& var, const Tensor& value, float scale = 1.0f);
  void compute(KernelContext& ctx) const override;
  bool differentiable() const override { return false; }
  bool is_assignment() const override { return true; }
  const Operation& variable() const { return inputs()[0].op(); }
  // For kAdd / kSub on float32 with a value of the variable's exact shape:
  // sets alpha (+scale or -scale) so that the update is var + alpha * value,
  // and returns true.
  bool as_scaled_update(float* alpha) const;

 private:
  Kind kind_;
  float scale_;
};

// var -= scale * value, fused: what SGD and momentum apply every step.
Operation* assign_sub_scaled(const Tensor& var, const Tensor& value, float scale);

}  // namespace mtf::ops
