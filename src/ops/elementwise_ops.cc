// Elementwise ops: unary maps, cast, broadcast-by-name binary ops, where,
// broadcast, identity and stop_gradient, with their gradients.
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

using kernels::BinaryFn;
using kernels::UnaryFn;

Tensor unary_op(UnaryFn fn, const Tensor& x, const std::string& name);

class UnaryOp : public Operation {
 public:
  UnaryOp(UnaryFn fn, const Tensor& x, const std::string& name)
      : Operation(x.mesh(), kernels::unary_name(fn), {x}, name), fn_(fn) {
    if (fn != UnaryFn::kIdentity) ops::reject_bool(type(), x);
    add_output(x.shape(), x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    if (fn_ == UnaryFn::kIdentity) {
      ctx.set_output(0, ctx.input(0));
      return;
    }
    kernels::unary(fn_, ctx.input(0), ctx.allocate_output(0));
  }
  bool computes_bfloat16() const override { return fn_ == UnaryFn::kIdentity; }
  UnaryFn fn() const { return fn_; }
  bool differentiable() const override {
    return is_floating(inputs()[0].dtype()) && fn_ != UnaryFn::kSign && fn_ != UnaryFn::kReluGrad;
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& x = inputs()[0];
    const Tensor y = output(0);
    const Tensor& dy = g[0];
    switch (fn_) {
      case UnaryFn::kIdentity:
        return {dy};
      case UnaryFn::kRelu:
        // From the output (y > 0 exactly where x > 0), so that the
        // pre-activation need not stay alive until the backward pass.
        return {dy * unary_op(UnaryFn::kReluGrad, y, "")};
      case UnaryFn::kGelu:
        return {dy * unary_op(UnaryFn::kGeluGrad, x, "")};
      case UnaryFn::kExp:
        return {dy * y};
      case UnaryFn::kLog:
        return {dy / x};
      case UnaryFn::kTanh:
        return {dy * (1.0f - square(y))};
      case UnaryFn::kSigmoid:
        return {dy * y * (1.0f - y)};
      case UnaryFn::kSqrt:
        return {dy * 0.5f / y};
      case UnaryFn::kRsqrt:
        return {dy * -0.5f * y * y * y};
      case UnaryFn::kSquare:
        return {dy * 2.0f * x};
      case UnaryFn::kAbs:
        return {dy * sign(x)};
      case UnaryFn::kNegative:
        return {-dy};
      case UnaryFn::kReciprocal:
        return {-dy * y * y};
      case UnaryFn::kSin:
        return {dy * cos(x)};
      case UnaryFn::kCos:
        return {-dy * sin(x)};
      case UnaryFn::kSoftplus:
        return {dy * sigmoid(x)};
      default:
        return Operation::gradient(g);
    }
  }

 private:
  UnaryFn fn_;
};

Tensor unary_op(UnaryFn fn, const Tensor& x, const std::string& name) {
  return x.graph().add<UnaryOp>(fn, x, name)->output(0);
}

class CastOp : public Operation {
 public:
  CastOp(const Tensor& x, DType dtype, const std::string& name)
      : Operation(x.mesh(), "cast", {x}, name) {
    add_output(x.shape(), dtype);
  }
  void compute(KernelContext& ctx) const override {
    kernels::cast(ctx.input(0), ctx.allocate_output(0));
  }
  bool computes_bfloat16() const override { return true; }
  // Between float32 and bfloat16 the gradient is cast back to the input's
  // dtype (Mesh TensorFlow's cast gradient); int32 on either side stops it.
  bool differentiable() const override {
    return is_floating(inputs()[0].dtype()) && is_floating(output(0).dtype());
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const DType in = inputs()[0].dtype();
    return {g[0].dtype() == in ? g[0] : cast(g[0], in)};
  }
};

class BinaryOp : public Operation {
 public:
  BinaryOp(BinaryFn fn, const Tensor& a, const Tensor& b, const Shape& out_shape)
      : Operation(a.mesh(), kernels::binary_name(fn), {a, b}, ""), fn_(fn) {
    ops::check_same_dtype(type(), {a, b});
    // Of bools: equality, and minimum / maximum (which are and / or).
    if (fn != BinaryFn::kEqual && fn != BinaryFn::kNotEqual && fn != BinaryFn::kMin &&
        fn != BinaryFn::kMax)
      ops::reject_bool(type(), a);
    for (const Tensor* t : {&a, &b}) {
      if (!t->shape().is_subset_of(out_shape)) {
        throw ShapeError(detail::str_cat(type(), ": output shape ", out_shape.to_string(),
                                         " lacks dimensions of input ", t->describe(),
                                         "; the output must contain every input dimension"));
      }
    }
    add_output(out_shape, kernels::is_comparison(fn) ? bool_ : a.dtype());
  }
  void compute(KernelContext& ctx) const override {
    kernels::binary(fn_, ctx.input(0), ctx.input(1), ctx.allocate_output(0));
  }
  BinaryFn fn() const { return fn_; }
  // A comparison of float32 or int32 slices writes its bool result itself;
  // of bfloat16 or bool ones it runs widened.
  bool computes_bfloat16() const override {
    const DType in = inputs()[0].dtype();
    return kernels::is_comparison(fn_) && (in == float32 || in == int32);
  }
  // floordiv is piecewise constant: no gradient flows through it.
  bool differentiable() const override {
    return !kernels::is_comparison(fn_) && fn_ != BinaryFn::kFloorDiv &&
           is_floating(inputs()[0].dtype());
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& a = inputs()[0];
    const Tensor& b = inputs()[1];
    const Tensor& dy = g[0];
    const Shape& as = a.shape();
    const Shape& bs = b.shape();
    auto zero = ops::scalar_like(dy, 0.0f);
    switch (fn_) {
      case BinaryFn::kAdd:
        return {ops::reduce_to(dy, as), ops::reduce_to(dy, bs)};
      case BinaryFn::kSub:
        return {ops::reduce_to(dy, as), ops::reduce_to(-dy, bs)};
      case BinaryFn::kMul:
        // einsum does the product and the reduction to each input in one op.
        return {einsum({dy, b}, as), einsum({dy, a}, bs)};
      case BinaryFn::kDiv:
        return {ops::reduce_to(dy / b, as), ops::reduce_to(-dy * output(0) / b, bs)};
      case BinaryFn::kMin:
        return {ops::reduce_to(where(less_equal(a, b), dy, zero), as),
                ops::reduce_to(where(greater(a, b), dy, zero), bs)};
      case BinaryFn::kMax:
        return {ops::reduce_to(where(greater_equal(a, b), dy, zero), as),
                ops::reduce_to(where(less(a, b), dy, zero), bs)};
      case BinaryFn::kPow: {
        Tensor da = dy * b * pow(a, b - 1.0f);
        Tensor log_a = where(greater(a, zero), log(where(greater(a, zero), a, zero + 1.0f)), zero);
        return {ops::reduce_to(da, as), ops::reduce_to(dy * output(0) * log_a, bs)};
      }
      case BinaryFn::kMod:  // a - floor(a / b) * b, floor's own gradient 0
        return {ops::reduce_to(dy, as), ops::reduce_to(-dy * floordiv(a, b), bs)};
      default:
        return Operation::gradient(g);
    }
  }

 private:
  BinaryFn fn_;
};

Tensor binary_op(BinaryFn fn, const Tensor& a, const Tensor& b, const Shape* out) {
  if (!a.valid() || !b.valid())
    throw ValueError(std::string(kernels::binary_name(fn)) +
                     ": an input is an invalid mtf::Tensor");
  ops::check_consistent_sizes(kernels::binary_name(fn), {a, b});
  Shape shape = out ? *out : ops::broadcast_shape(a.shape(), b.shape());
  if (out) {
    for (const Dimension& d : *out) {
      for (const Tensor* t : {&a, &b}) {
        int i = t->shape().index_of(d.name);
        if (i >= 0 && t->shape()[i].size != d.size)
          throw ShapeError(detail::str_cat(kernels::binary_name(fn), ": output dimension ",
                                           d.to_string(), " disagrees with input ", t->describe()));
      }
    }
  }
  return a.graph().add<BinaryOp>(fn, a, b, shape)->output(0);
}

class WhereOp : public Operation {
 public:
  WhereOp(const Tensor& c, const Tensor& x, const Tensor& y)
      : Operation(x.mesh(), "where", {c, x, y}, "") {
    ops::check_same_dtype("where", {x, y});
    ops::check_consistent_sizes("where", {c, x, y});
    add_output(x.shape().union_with(y.shape()).union_with(c.shape()), x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    kernels::where(ctx.input(0), ctx.input(1), ctx.input(2), ctx.allocate_output(0));
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& c = inputs()[0];
    Tensor zero = ops::scalar_like(g[0], 0.0f);
    return {Tensor(), ops::reduce_to(where(c, g[0], zero), inputs()[1].shape()),
            ops::reduce_to(where(c, zero, g[0]), inputs()[2].shape())};
  }
};

class BroadcastOp : public Operation {
 public:
  BroadcastOp(const Tensor& x, const Shape& shape, const char* type)
      : Operation(x.mesh(), type, {x}, "") {
    if (!x.shape().is_subset_of(shape)) {
      throw ShapeError(detail::str_cat(type, ": target shape ", shape.to_string(),
                                       " does not contain every dimension of ", x.describe()));
    }
    add_output(shape, x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    kernels::broadcast_copy(ctx.input(0), ctx.allocate_output(0));
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    return {ops::reduce_to(g[0], inputs()[0].shape())};
  }
};

class StopGradientOp : public Operation {
 public:
  StopGradientOp(const Tensor& x, const std::string& name)
      : Operation(x.mesh(), "stop_gradient", {x}, name) {
    add_output(x.shape(), x.dtype());
  }
  void compute(KernelContext& ctx) const override { ctx.set_output(0, ctx.input(0)); }
  bool computes_bfloat16() const override { return true; }  // hands the input over
  bool differentiable() const override { return false; }
  double flops() const override { return 0; }
};

// value, whose gradient with respect to `x` is grad(dy): value's own ops
// get no gradient (they read stop_gradient(x)), so the backward pass keeps
// only what grad reads.
class WithGradientOp : public Operation {
 public:
  WithGradientOp(const Tensor& x, const Tensor& value, ops::GradientFn grad)
      : Operation(x.mesh(), "with_gradient", {x, value}, ""), grad_(std::move(grad)) {
    add_output(value.shape(), value.dtype());
  }
  void compute(KernelContext& ctx) const override { ctx.set_output(0, ctx.input(1)); }
  bool computes_bfloat16() const override { return true; }  // hands the value over
  bool reads_input(int input) const override { return input == 1; }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    return {grad_(g[0]), Tensor()};
  }
  double flops() const override { return 0; }

 private:
  ops::GradientFn grad_;
};

}  // namespace

namespace ops {

Tensor with_gradient(const Tensor& x, const Tensor& value, GradientFn grad) {
  return x.graph().add<WithGradientOp>(x, value, std::move(grad))->output(0);
}

bool as_fused_instr(const Operation& op, kernels::FusedInstr* instr) {
  if (op.num_outputs() != 1 || !is_floating(op.output(0).dtype())) return false;
  for (const Tensor& t : op.inputs())
    if (!is_floating(t.dtype())) return false;
  instr->round_bfloat16 = op.output(0).dtype() == bfloat16;
  if (dynamic_cast<const CastOp*>(&op)) {  // float32 <-> bfloat16
    instr->kind = kernels::FusedInstr::Kind::kUnary;
    instr->unary = UnaryFn::kIdentity;
    return true;
  }
  if (const auto* u = dynamic_cast<const UnaryOp*>(&op)) {
    if (u->fn() == UnaryFn::kIdentity) return false;
    instr->kind = kernels::FusedInstr::Kind::kUnary;
    instr->unary = u->fn();
    return true;
  }
  if (const auto* b = dynamic_cast<const BinaryOp*>(&op)) {
    if (kernels::is_comparison(b->fn())) return false;
    instr->kind = kernels::FusedInstr::Kind::kBinary;
    instr->binary = b->fn();
    return true;
  }
  return false;
}

}  // namespace ops

Tensor relu(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kRelu, x, n); }
Tensor gelu(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kGelu, x, n); }
Tensor exp(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kExp, x, n); }
Tensor log(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kLog, x, n); }
Tensor tanh(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kTanh, x, n); }
Tensor sigmoid(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kSigmoid, x, n); }
Tensor sqrt(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kSqrt, x, n); }
Tensor rsqrt(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kRsqrt, x, n); }
Tensor square(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kSquare, x, n); }
Tensor abs(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kAbs, x, n); }
Tensor negative(const Tensor& x, const std::string& n) {
  return unary_op(UnaryFn::kNegative, x, n);
}
Tensor reciprocal(const Tensor& x, const std::string& n) {
  return unary_op(UnaryFn::kReciprocal, x, n);
}
Tensor sin(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kSin, x, n); }
Tensor cos(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kCos, x, n); }
Tensor softplus(const Tensor& x, const std::string& n) {
  return unary_op(UnaryFn::kSoftplus, x, n);
}
Tensor sign(const Tensor& x, const std::string& n) { return unary_op(UnaryFn::kSign, x, n); }
Tensor identity(const Tensor& x, const std::string& n) {
  return unary_op(UnaryFn::kIdentity, x, n);
}
Tensor cast(const Tensor& x, DType dtype, const std::string& name) {
  return x.graph().add<CastOp>(x, dtype, name)->output(0);
}
Tensor stop_gradient(const Tensor& x, const std::string& name) {
  return x.graph().add<StopGradientOp>(x, name)->output(0);
}

Tensor add(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kAdd, a, b, o);
}
Tensor subtract(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kSub, a, b, o);
}
Tensor multiply(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kMul, a, b, o);
}
Tensor divide(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kDiv, a, b, o);
}
Tensor minimum(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kMin, a, b, o);
}
Tensor maximum(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kMax, a, b, o);
}
Tensor pow(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kPow, a, b, o);
}
Tensor floordiv(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kFloorDiv, a, b, o);
}
Tensor mod(const Tensor& a, const Tensor& b, const Shape* o) {
  return binary_op(BinaryFn::kMod, a, b, o);
}
Tensor less(const Tensor& a, const Tensor& b) { return binary_op(BinaryFn::kLess, a, b, nullptr); }
Tensor less_equal(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryFn::kLessEqual, a, b, nullptr);
}
Tensor greater(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryFn::kGreater, a, b, nullptr);
}
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryFn::kGreaterEqual, a, b, nullptr);
}
Tensor equal(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryFn::kEqual, a, b, nullptr);
}
Tensor not_equal(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryFn::kNotEqual, a, b, nullptr);
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  return x.graph().add<WhereOp>(cond, x, y)->output(0);
}

Tensor add_n(const std::vector<Tensor>& xs) {
  if (xs.empty()) throw ValueError("add_n: no tensors to add");
  Tensor sum = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) sum = add(sum, xs[i]);
  return sum;
}

Tensor broadcast(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return x.graph().add<BroadcastOp>(x, shape, "broadcast")->output(0);
}

Tensor transpose(const Tensor& x, const Shape& new_shape, const std::string& name) {
  if (!x.shape().same_dims_as(new_shape)) {
    throw ShapeError(detail::str_cat("transpose", name.empty() ? "" : " \"" + name + "\"",
                                     ": new shape ", new_shape.to_string(),
                                     " must hold exactly the dimensions of ", x.describe()));
  }
  if (x.shape() == new_shape) return x;
  return x.graph().add<BroadcastOp>(x, new_shape, "transpose")->output(0);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& a) { return negative(a); }
Tensor operator+(const Tensor& a, float b) { return add(a, ops::scalar_like(a, b)); }
Tensor operator-(const Tensor& a, float b) { return subtract(a, ops::scalar_like(a, b)); }
Tensor operator*(const Tensor& a, float b) { return multiply(a, ops::scalar_like(a, b)); }
Tensor operator/(const Tensor& a, float b) { return divide(a, ops::scalar_like(a, b)); }
Tensor operator+(float a, const Tensor& b) { return add(ops::scalar_like(b, a), b); }
Tensor operator-(float a, const Tensor& b) { return subtract(ops::scalar_like(b, a), b); }
Tensor operator*(float a, const Tensor& b) { return multiply(ops::scalar_like(b, a), b); }
Tensor operator/(float a, const Tensor& b) { return divide(ops::scalar_like(b, a), b); }

}  // namespace mtf
