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
                       Initializer init, const VariableDType& dtype, bool trainable)
    : Operation(mesh, "variable", {}, name), init_(init), dtype_(dtype), trainable_(trainable) {
  seed_ = derive_seed(mesh.graph().seed(), this->name());
  add_output(shape, dtype.slice);
}

Tensor variable_behind(const Tensor& t) {
  if (!t.valid()) return Tensor();
  if (is_variable(t)) return t;
  if (t.op().type() == "cast" && is_variable(t.op().inputs()[0])) return t.op().inputs()[0];
  return Tensor();
}

void VariableOp::compute(KernelContext& ctx) const {
  auto it = ctx.state().variables->find(this);
  MTF_CHECK(it != ctx.state().variables->end());
  ctx.set_output(0, it->second);
}

HostTensor VariableOp::initial_value(const Shape& slice_shape,
                                     const std::vector<int64_t>& offset) const {
  const Shape& full = output(0).shape();
  // A bfloat16 variable starts from the float32 draws, rounded: the same
  // values as a float32 variable of the same seed, to bfloat16's precision.
  const bool rounded = output(0).dtype() == bfloat16;
  const DType dtype = rounded ? float32 : output(0).dtype();
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
  return rounded ? t.as_dtype(bfloat16) : t;
}

AssignOp::AssignOp(Kind kind, const Tensor& var, const Tensor& value, float scale)
    : Operation(
          var.mesh(),
          kind == Kind::kAssign ? "assign" : (kind == Kind::kAdd ? "assign_add" : "assign_sub"),
          {var, value}, ""),
      kind_(kind),
      scale_(scale) {
  if (scale != 1.0f && var.dtype() == int32) {
    throw DTypeError(
        detail::str_cat(type(), ": a scaled update needs a float variable, not ", var.describe()));
  }
  if (kind != Kind::kAssign) reject_bool(type(), var);
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

VariableDType VariableDType::of(DType dtype) {
  if (dtype == bfloat16) return VariableDType(float32, bfloat16, bfloat16);
  return VariableDType(dtype, dtype, dtype);
}

std::string VariableDType::to_string() const {
  return "master " + dtype_name(master) + ", slice " + dtype_name(slice) + ", activation " +
         dtype_name(activation);
}

void VariableDType::validate(const std::string& where) const {
  auto refuse = [&](const std::string& why) {
    throw DTypeError(where + ": variable dtype (" + to_string() + ") " + why);
  };
  if (master == bfloat16) {
    refuse(
        "has a bfloat16 master: updates smaller than 1/256 of a weight would be lost; keep "
        "the master float32 (Mesh TensorFlow's choice), with bfloat16 slices and activations "
        "for half the memory");
  }
  if (master == int32 && (slice != int32 || activation != int32))
    refuse("mixes an int32 master with float slices or activations; use int32 throughout");
  if (master == float32 && (slice == int32 || activation == int32))
    refuse("has a float32 master with int32 slices or activations; cast the value instead");
  if ((master == bool_) != (slice == bool_) || (master == bool_) != (activation == bool_))
    refuse("mixes bool with other dtypes; use bool throughout (cast the value instead)");
}

Tensor get_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                    Initializer initializer, DType dtype, bool trainable) {
  return get_variable(mesh, name, shape, initializer, VariableDType::of(dtype), trainable);
}

Tensor get_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                    Initializer initializer, const VariableDType& dtype, bool trainable) {
  Graph& g = mesh.graph();
  dtype.validate("get_variable \"" + name + "\"");
  if (name.empty()) throw ValueError("get_variable: a variable needs a name");
  if (g.unique_name(name, false) != name) {
    throw ValueError(detail::str_cat("get_variable: the name \"", name,
                                     "\" is already used in this graph; variable names must be "
                                     "unique because checkpoints are keyed by them"));
  }
  auto* op = g.add<ops::VariableOp>(mesh, name, shape, initializer, dtype, trainable);
  g.add_variable(op->output(0), trainable);
  const Tensor value = op->output(0);
  return dtype.activation == dtype.slice ? value : cast(value, dtype.activation, name + "/read");
}

namespace {

// assign*'s target resolved through get_variable's cast, and its value cast
// to the variable's slice dtype when both are float.
std::pair<Tensor, Tensor> assignment_operands(const Tensor& var, const Tensor& value) {
  const Tensor v = ops::variable_behind(var);
  if (!v.valid() || !value.valid()) return {var, value};
  const bool cast_value =
      value.dtype() != v.dtype() && is_floating(value.dtype()) && is_floating(v.dtype());
  return {v, cast_value ? cast(value, v.dtype()) : value};
}

}  // namespace

bool is_variable(const Tensor& t) {
  return t.valid() && dynamic_cast<const ops::VariableOp*>(&t.op()) != nullptr;
}

Operation* assign(const Tensor& var, const Tensor& value) {
  const auto [v, x] = assignment_operands(var, value);
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kAssign, v, x);
}
Operation* assign_add(const Tensor& var, const Tensor& value) {
  const auto [v, x] = assignment_operands(var, value);
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kAdd, v, x);
}
Operation* assign_sub(const Tensor& var, const Tensor& value) {
  const auto [v, x] = assignment_operands(var, value);
  return var.graph().add<ops::AssignOp>(ops::AssignOp::Kind::kSub, v, x);
}

Operation* assign_slice(const Tensor& var, const Tensor& value, int64_t begin,
                        const DimRef& dim_ref) {
  const OriginScope origin = ops::made_by("assign_slice", var);
  const Dimension dim = ops::dim_of("assign_slice", var, dim_ref);
  const int index = value.shape().index_of(dim.name);
  const int64_t n = index < 0 ? -1 : value.shape()[index].size;
  if (index < 0 || begin < 0 || begin + n > dim.size ||
      !(value.shape().resize(dim.name, dim.size) == var.shape())) {
    throw ShapeError(detail::str_cat("assign_slice: value ", value.describe(),
                                     " must have variable ", var.describe(), "'s shape with ",
                                     dim.to_string(), " at most ", dim.size - begin,
                                     " long (from position ", begin, ")"));
  }
  // value padded to var's length, chosen inside [begin, begin + n).
  const Tensor at = range(var.mesh(), dim, float32);
  const Tensor inside = logical_and(greater_equal(at, constant(var.mesh(), float(begin))),
                                    less(at, constant(var.mesh(), float(begin + n))));
  const Tensor padded = pad(value, begin, dim.size - begin - n, dim.name);
  return assign(var, transpose(where(inside, padded, var), var.shape()));
}

}  // namespace mtf
