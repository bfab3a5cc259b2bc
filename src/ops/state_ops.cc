#include "ops/state_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"
#include "ops/seed.h"

namespace mtf {
namespace ops {

VariableOp::VariableOp(const Mesh& mesh, const std::string& name, const Shape& shape,
                       Initializer init, DType dtype, bool trainable)
    : Operation(mesh, "variable", {}, name), init_(init), trainable_(trainable) {
  seed_ = derive_seed(mesh.graph().seed(), this->name());
  add_output(shape, dtype);
}

void VariableOp::compute(KernelContext& ctx) const {
  auto it = ctx.state().variables->find(this);
  MTF_CHECK(it != ctx.state().variables->end());
  ctx.set_output(0, it->second);
}

HostTensor VariableOp::initial_value(const Shape& slice_shape,
                                     const std::vector<int64_t>& offset) const {
  const Shape& full = output(0).shape();
  const DType dtype = output(0).dtype();
  HostTensor t(slice_shape, dtype);
  using K = Initializer::Kind;
  auto float_only = [&]() {
    if (dtype != float32)
      throw DTypeError("variable \"" + name() + "\": a random initializer needs float32, not " +
                       dtype_name(dtype));
  };
  switch (init_.kind) {
    case K::kZeros:
      kernels::fill(t, 0.f);
      break;
    case K::kOnes:
      kernels::fill(t, 1.f);
      break;
    case K::kConstant:
      kernels::fill(t, init_.a);
      break;
    case K::kNormal:
      float_only();
      kernels::random_normal(seed_, 0, full, offset, init_.a, init_.b, false, t);
      break;
    case K::kTruncatedNormal:
      float_only();
      kernels::random_normal(seed_, 0, full, offset, 0.f, init_.b, true, t);
      break;
    case K::kUniform:
      float_only();
      kernels::random_uniform(seed_, 0, full, offset, init_.a, init_.b, t);
      break;
    case K::kGlorotUniform: {
      float_only();
      // TensorFlow's fans: the last dimension is fan_out, the one before it
      // fan_in, and any others a receptive field multiplying both.
      double fan_in = 1, fan_out = 1;
      const int nd = full.ndims();
      if (nd >= 1) fan_out = static_cast<double>(full[nd - 1].size);
      if (nd >= 2) fan_in = static_cast<double>(full[nd - 2].size);
      if (nd == 1) fan_in = fan_out;
      for (int i = 0; i + 2 < nd; ++i) {
        fan_in *= static_cast<double>(full[i].size);
        fan_out *= static_cast<double>(full[i].size);
      }
      const float limit = static_cast<float>(std::sqrt(6.0 / std::max(1.0, fan_in + fan_out)));
      kernels::random_uniform(seed_, 0, full, offset, -limit, limit, t);
      break;
    }
  }
  return t;
}

AssignOp::AssignOp(Kind kind, const Tensor& var, const Tensor& value, float scale)
    : Operation(
          var.mesh(),
          kind == Kind::kAssign ? "assign" : (kind == Kind::kAdd ? "assign_add" : "assign_sub"),
          {var, value}, ""),
      kind_(kind),
      scale_(scale) {
  if (scale != 1.0f && var.dtype() != float32) {
    throw DTypeError(detail::str_cat(type(), ": a scaled update needs a float32 variable, not ",
                                     var.describe()));
  }
  if (!is_variable(var)) {
    throw ValueError(detail::str_cat(type(), ": target ", var.describe(),
                                     " is not a variable (pass the tensor get_variable returned)"));
  }
  check_same_dtype(type(), {var, value});
  check_consistent_sizes(type(), {var, value});
  if (!value.shape().is_subset_of(var.shape())) {
    throw ShapeError(detail::str_cat(type(), ": value ", value.describe(),
                                     " has dimensions that variable ", var.describe(), " lacks"));
  }
}

void AssignOp::compute(KernelContext& ctx) const {
  const HostTensor& var = ctx.input(0);
  const HostTensor& value = ctx.input(1);
  if (kind_ == Kind::kAssign && value.shape() == var.shape() && value.sole_owner()) {
    // A value this run computed and nothing else holds (not a feed, not a
    // variable): the variable takes its buffer, no copy. Tensors are never
    // written once made, and a later step cannot take over a buffer that
    // the pending value shares.
    ctx.state().pending_assignments.emplace_back(&variable(), value);
    return;
  }
  HostTensor next(var.shape(), var.dtype());
  switch (kind_) {
    case Kind::kAssign:
      kernels::broadcast_copy(value, next);
      break;
    case Kind::kAdd:
      if (var.dtype() == float32)
        kernels::scaled_add(var, scale_, value, next);
      else
        kernels::binary(kernels::BinaryFn::kAdd, var, value, next);
      break;
    case Kind::kSub:
      if (var.dtype() == float32)
        kernels::scaled_add(var, -scale_, value, next);
      else
        kernels::binary(kernels::BinaryFn::kSub, var, value, next);
      break;
  }
  ctx.state().pending_assignments.emplace_back(&variable(), std::move(next));
}

bool AssignOp::as_scaled_update(float* alpha) const {
  if (kind_ == Kind::kAssign || inputs()[0].dtype() != float32) return false;
  if (inputs()[1].shape() != inputs()[0].shape()) return false;
  *alpha = kind_ == Kind::kAdd ? scale_ : -scale_;
  return true;
}

bool as_scaled_update(const Operation& op, float* alpha) {
  const auto* a = dynamic_cast<const AssignOp*>(&op);
  return a && a->as_scaled_update(alpha);
}

Operation* assign_sub_scaled(const Tensor& var, const Tensor& value, float scale) {
  return var.graph().add<AssignOp>(AssignOp::Kind::kSub, var, value, scale);
}

}  // namespace ops

Tensor get_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                    Initializer initializer, DType dtype, bool trainable) {
  Graph& g = mesh.graph();
  if (name.empty()) throw ValueError("get_variable: a variable needs a name");
  if (g.unique_name(name, false) != name) {
    throw ValueError(detail::str_cat("get_variable: the name \"", name,
                                     "\" is already used in this graph; variable names must be "
                                     "unique because checkpoints are keyed by them"));
  }
  auto* op = g.add<ops::VariableOp>(mesh, name, shape, initializer, dtype, trainable);
  g.add_variable(op->output(0), trainable);
  return op->output(0);
}

bool is_variable(const Tensor& t) {
  return t.valid() && dynamic_cast<const ops::VariableOp*>(&t.op()) != nullptr;
}

Operation* assign(const Tensor& var, const Tensor& value) {
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kAssign, var, value);
}
Operation* assign_add(const Tensor& var, const Tensor& value) {
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kAdd, var, value);
}
Operation* assign_sub(const Tensor& var, const Tensor& value) {
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kSub, var, value);
}

}  // namespace mtf
