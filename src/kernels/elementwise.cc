// Elementwise kernels: unary maps, cast, broadcast-by-name binary ops, where,
// fill and broadcast_copy. Inner loops are contiguous where the plan allows
// so the compiler can vectorize them.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/arithmetic.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"
#include "kernels/vector_math.h"

namespace mtf::kernels {

void require_supported(const HostTensor& t, bool allow_int, const char* kernel) {
  if (t.dtype() == float32 || (allow_int && t.dtype() == int32)) return;
  throw DTypeError(detail::str_cat(
      kernel, ": dtype ", dtype_name(t.dtype()),
      " is not supported by the CPU kernels (use float32", allow_int ? " or int32" : "",
      t.dtype() == bfloat16 ? "; bfloat16 tensors run through cast only so far: cast to float32 "
                              "before this op)"
                            : ")"));
}

const char* unary_name(UnaryFn fn) {
  static const char* names[] = {"identity", "relu",     "gelu",       "exp",      "log",
                                "tanh",     "sigmoid",  "sqrt",       "rsqrt",    "square",
                                "abs",      "negative", "reciprocal", "sin",      "cos",
                                "softplus", "sign",     "relu_grad",  "gelu_grad"};
  return names[static_cast<int>(fn)];
}

namespace {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)

template <typename T, typename F>
void map(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

}  // namespace

void unary_float(UnaryFn fn, const float* x, float* y, int64_t n) {
  switch (fn) {
    case UnaryFn::kIdentity:
      std::memcpy(y, x, n * sizeof(float));
      return;
    case UnaryFn::kRelu:
      return map(x, y, n, arith::Relu{});
    case UnaryFn::kGelu:
      return map(x, y, n, [](float v) {
        return 0.5f * v * (1.f + std::tanh(kGeluC * (v + 0.044715f * v * v * v)));
      });
    case UnaryFn::kExp:
      return exp_array(x, y, n);
    case UnaryFn::kLog:
      return map(x, y, n, [](float v) { return std::log(v); });
    case UnaryFn::kTanh:
      return map(x, y, n, [](float v) { return std::tanh(v); });
    case UnaryFn::kSigmoid:
      return map(x, y, n, [](float v) {
        // Stable on both tails.
        if (v >= 0.f) return 1.f / (1.f + std::exp(-v));
        float e = std::exp(v);
        return e / (1.f + e);
      });
    case UnaryFn::kSqrt:
      return map(x, y, n, [](float v) { return std::sqrt(v); });
    case UnaryFn::kRsqrt:
      return map(x, y, n, [](float v) { return 1.f / std::sqrt(v); });
    case UnaryFn::kSquare:
      return map(x, y, n, arith::Square{});
    case UnaryFn::kAbs:
      return map(x, y, n, arith::Abs{});
    case UnaryFn::kNegative:
      return map(x, y, n, arith::Negative{});
    case UnaryFn::kReciprocal:
      return map(x, y, n, [](float v) { return 1.f / v; });
    case UnaryFn::kSin:
      return map(x, y, n, [](float v) { return std::sin(v); });
    case UnaryFn::kCos:
      return map(x, y, n, [](float v) { return std::cos(v); });
    case UnaryFn::kSoftplus:
      return map(x, y, n, [](float v) {
        return v > 0.f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      });
    case UnaryFn::kSign:
      return map(x, y, n, [](float v) {
        return v > 0.f ? 1.f : v < 0.f ? -1.f : v == v ? 0.f : v;
      });
    case UnaryFn::kReluGrad:
      return map(x, y, n, arith::ReluGrad{});
    case UnaryFn::kGeluGrad:
      return map(x, y, n, [](float v) {
        float u = kGeluC * (v + 0.044715f * v * v * v);
        float t = std::tanh(u);
        float du = kGeluC * (1.f + 3.f * 0.044715f * v * v);
        return 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du;
      });
  }
}

namespace {

void unary_int(UnaryFn fn, const int32_t* x, int32_t* y, int64_t n) {
  switch (fn) {
    case UnaryFn::kIdentity:
      std::memcpy(y, x, n * sizeof(int32_t));
      return;
    case UnaryFn::kRelu:
      return map(x, y, n, [](int32_t v) { return v > 0 ? v : 0; });
    case UnaryFn::kSquare:
      return map(x, y, n, [](int32_t v) { return v * v; });
    case UnaryFn::kAbs:
      return map(x, y, n, [](int32_t v) { return v < 0 ? -v : v; });
    case UnaryFn::kNegative:
      return map(x, y, n, [](int32_t v) { return -v; });
    case UnaryFn::kSign:
      return map(x, y, n, [](int32_t v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); });
    default:
      throw DTypeError(detail::str_cat(unary_name(fn), " is not defined for int32 tensors; cast ",
                                       "to float32 first"));
  }
}

}  // namespace

void unary(UnaryFn fn, const HostTensor& x, HostTensor& y) {
  require_supported(x, true, unary_name(fn));
  MTF_CHECK(x.num_elements() == y.num_elements() && x.dtype() == y.dtype());
  if (x.dtype() == float32) {
    unary_float(fn, x.data<float>(), y.data<float>(), x.num_elements());
  } else {
    unary_int(fn, x.data<int32_t>(), y.data<int32_t>(), x.num_elements());
  }
}

namespace {

// From bool: 0 or 1 in y's dtype, one pass.
void cast_from_bool(const uint8_t* p, HostTensor& y, int64_t n) {
  if (y.dtype() == float32) {
    float* q = y.data<float>();
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] ? 1.0f : 0.0f;
  } else if (y.dtype() == int32) {
    int32_t* q = y.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] ? 1 : 0;
  } else {
    MTF_CHECK(y.dtype() == bfloat16);
    uint16_t* q = reinterpret_cast<uint16_t*>(y.data<BFloat16>());
    constexpr uint16_t kOne = 0x3f80;  // 1.0 in bfloat16
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] ? kOne : 0;
  }
}

// To bool: nonzero (NaN included; either zero's sign is false), one pass.
void cast_to_bool(const HostTensor& x, uint8_t* q, int64_t n) {
  if (x.dtype() == float32) {
    const float* p = x.data<float>();
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] != 0.0f;
  } else if (x.dtype() == int32) {
    const int32_t* p = x.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) q[i] = p[i] != 0;
  } else {
    MTF_CHECK(x.dtype() == bfloat16);
    const uint16_t* p = reinterpret_cast<const uint16_t*>(x.data<BFloat16>());
    for (int64_t i = 0; i < n; ++i) q[i] = (p[i] & 0x7fff) != 0;
  }
}

}  // namespace

void cast(const HostTensor& x, HostTensor& y) {
  // bfloat16 is the one kernel's dtype here so far: cast into and out of it.
  MTF_CHECK(x.num_elements() == y.num_elements());
  const int64_t n = x.num_elements();
  if (x.dtype() == y.dtype()) {
    if (n) std::memcpy(y.raw_data(), x.raw_data(), x.num_bytes());
  } else if (x.dtype() == bool_) {
    cast_from_bool(x.data<uint8_t>(), y, n);
  } else if (y.dtype() == bool_) {
    cast_to_bool(x, y.data<uint8_t>(), n);
  } else if (y.dtype() == bfloat16 && x.dtype() == float32) {
    floats_to_bfloat16(x.data<float>(), reinterpret_cast<uint16_t*>(y.data<BFloat16>()), n);
  } else if (x.dtype() == bfloat16 && y.dtype() == float32) {
    bfloat16_to_floats(reinterpret_cast<const uint16_t*>(x.data<BFloat16>()), y.data<float>(), n);
  } else if (x.dtype() == bfloat16 || y.dtype() == bfloat16) {
    // int32 <-> bfloat16 through float32 (exact for |v| <= 2^24 on the way in).
    HostTensor via = x.as_dtype(float32).as_dtype(y.dtype());
    if (n) std::memcpy(y.raw_data(), via.raw_data(), y.num_bytes());
  } else if (x.dtype() == float32) {
    // Truncation toward zero, as C++ and TensorFlow do.
    const float* p = x.data<float>();
    int32_t* q = y.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int32_t>(p[i]);
  } else {
    const int32_t* p = x.data<int32_t>();
    float* q = y.data<float>();
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<float>(p[i]);
  }
}

const char* binary_name(BinaryFn fn) {
  static const char* names[] = {"add",        "subtract", "multiply",      "divide", "minimum",
                                "maximum",    "pow",      "floordiv",      "mod",    "less",
                                "less_equal", "greater",  "greater_equal", "equal",  "not_equal"};
  return names[static_cast<int>(fn)];
}

bool is_comparison(BinaryFn fn) {
  return static_cast<int>(fn) >= static_cast<int>(BinaryFn::kLess);
}

namespace {

// One row: o[i] = f(x[i * sx], y[i * sy]), o contiguous; the common
// strides (1 and 0) get loops the compiler vectorizes.
template <typename TO, typename TA, typename F>
void apply_row(TO* o, const TA* x, int64_t sx, const TA* y, int64_t sy, int64_t n, F f) {
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
  } else if (sx == 1 && sy == 0) {
    const TA yv = *y;
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
  } else if (sx == 0 && sy == 1) {
    const TA xv = *x;
    for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i * sx], y[i * sy]);
  }
}

// Runs f(a_elem, b_elem) -> out over a broadcast plan. (out is row-major in
// the plan's order, so its inner stride is 1.)
template <typename TA, typename TO, typename F>
void broadcast_apply(const HostTensor& a, const HostTensor& b, HostTensor& out, F f) {
  const auto names = out.shape().names();
  auto plan = make_plan<3>(
      out.shape().sizes(),
      {out.shape().strides(), strides_along(names, a.shape().names(), a.shape().strides()),
       strides_along(names, b.shape().names(), b.shape().strides())});
  const TA* pa = static_cast<const TA*>(a.raw_data());
  const TA* pb = static_cast<const TA*>(b.raw_data());
  TO* po = static_cast<TO*>(out.raw_data());
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    apply_row(po + off[0], pa + off[1], s[1], pb + off[2], s[2], n, f);
  });
}

// Division rounding toward minus infinity, and the remainder that goes with
// it (the divisor's sign), as Python, NumPy and TensorFlow define them. For
// floats the remainder is fmod's corrected by one divisor where the signs
// differ (exact, unlike x - floor(x / y) * y).
// (Integer x / -1 is -x wrapped, as two's complement gives it: INT_MIN / -1
// would be undefined in C++.)
template <typename T>
T floor_div(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (y == -1) return static_cast<T>(0u - static_cast<uint32_t>(x));
    const T q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
  } else {
    return std::floor(x / y);
  }
}
template <typename T>
T floor_mod(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    if (y == -1) return 0;
    const T r = x % y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  } else {
    const T r = std::fmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
}

// Calls visit(f) with the function of arithmetic op fn on T: the one
// definition of each op, shared by whole-tensor and fused kernels.
template <typename T, typename Visit>
void visit_arithmetic(BinaryFn fn, Visit&& visit) {
  switch (fn) {
    case BinaryFn::kAdd:
      return visit(arith::Add<T>{});
    case BinaryFn::kSub:
      return visit(arith::Sub<T>{});
    case BinaryFn::kMul:
      return visit(arith::Mul<T>{});
    case BinaryFn::kDiv:
      return visit(arith::Div<T>{});
    case BinaryFn::kMin:
      return visit(arith::Min<T>{});
    case BinaryFn::kMax:
      return visit(arith::Max<T>{});
    case BinaryFn::kPow:
      return visit([](T x, T y) {
        return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      });
    case BinaryFn::kFloorDiv:
      return visit([](T x, T y) { return floor_div(x, y); });
    case BinaryFn::kMod:
      return visit([](T x, T y) { return floor_mod(x, y); });
    default:
      MTF_CHECK(false);
  }
}

// A comparison's 0 / 1 result as I: uint8_t into a bool output, int32_t
// into a widened one (Operation::computes_bfloat16).
template <typename T, typename I>
void compare_typed(BinaryFn fn, const HostTensor& a, const HostTensor& b, HostTensor& out) {
  switch (fn) {
    case BinaryFn::kLess:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x < y); });
    case BinaryFn::kLessEqual:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x <= y); });
    case BinaryFn::kGreater:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x > y); });
    case BinaryFn::kGreaterEqual:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x >= y); });
    case BinaryFn::kEqual:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x == y); });
    case BinaryFn::kNotEqual:
      return broadcast_apply<T, I>(a, b, out, [](T x, T y) { return I(x != y); });
    default:
      MTF_CHECK(false);
  }
}

template <typename T>
void binary_typed(BinaryFn fn, const HostTensor& a, const HostTensor& b, HostTensor& out) {
  if (is_comparison(fn)) {
    if (out.dtype() == bool_) return compare_typed<T, uint8_t>(fn, a, b, out);
    MTF_CHECK(out.dtype() == int32);
    return compare_typed<T, int32_t>(fn, a, b, out);
  }
  if constexpr (std::is_integral_v<T>) {
    if (fn == BinaryFn::kDiv || fn == BinaryFn::kFloorDiv || fn == BinaryFn::kMod) {
      const T* pb = static_cast<const T*>(b.raw_data());
      for (int64_t i = 0; i < b.num_elements(); ++i) {
        if (pb[i] == 0) {
          throw ValueError("integer division by zero (element " + std::to_string(i) +
                           " of the divisor is 0)");
        }
      }
    }
  }
  visit_arithmetic<T>(fn, [&](auto f) { broadcast_apply<T, T>(a, b, out, f); });
}

}  // namespace

void binary(BinaryFn fn, const HostTensor& a, const HostTensor& b, HostTensor& out) {
  require_supported(a, true, binary_name(fn));
  MTF_CHECK(a.dtype() == b.dtype());
  if (a.dtype() == float32) {
    binary_typed<float>(fn, a, b, out);
  } else {
    binary_typed<int32_t>(fn, a, b, out);
  }
}

void binary_float_row(BinaryFn fn, float* out, const float* a, int64_t sa, const float* b,
                      int64_t sb, int64_t n) {
  visit_arithmetic<float>(fn, [&](auto f) { apply_row(out, a, sa, b, sb, n, f); });
}

void scaled_add(const HostTensor& a, float alpha, const HostTensor& b, HostTensor& out) {
  require_supported(a, false, "scaled_add");
  require_supported(b, false, "scaled_add");
  broadcast_apply<float, float>(a, b, out, [alpha](float x, float y) { return x + alpha * y; });
}

void where(const HostTensor& cond, const HostTensor& x, const HostTensor& y, HostTensor& out) {
  // A select, not cond * x + (1 - cond) * y (which would lose NaN/inf), in
  // one pass over out reading each operand through its broadcast strides:
  // rows where cond does not vary copy or fill from one side.
  MTF_CHECK(x.dtype() == out.dtype() && y.dtype() == out.dtype() && dtype_size(out.dtype()) == 4);
  HostTensor c = cond;
  if (cond.dtype() != int32) {
    require_supported(cond, true, "where");
    c = HostTensor(cond.shape(), int32);
    const float* p = cond.data<float>();
    int32_t* q = c.data<int32_t>();
    for (int64_t i = 0; i < cond.num_elements(); ++i) q[i] = p[i] != 0.f;
  }
  const auto names = out.shape().names();
  auto plan = make_plan<4>(
      out.shape().sizes(),
      {out.shape().strides(), strides_along(names, c.shape().names(), c.shape().strides()),
       strides_along(names, x.shape().names(), x.shape().strides()),
       strides_along(names, y.shape().names(), y.shape().strides())});
  const int32_t* pc = c.data<int32_t>();
  const uint32_t* px = static_cast<const uint32_t*>(x.raw_data());
  const uint32_t* py = static_cast<const uint32_t*>(y.raw_data());
  uint32_t* po = static_cast<uint32_t*>(out.raw_data());
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    uint32_t* o = po + off[0];
    const int32_t* k = pc + off[1];
    const uint32_t* a = px + off[2];
    const uint32_t* b = py + off[3];
    if (s[1] == 0) {  // one choice for the whole row
      const uint32_t* from = *k ? a : b;
      const int64_t step = *k ? s[2] : s[3];
      if (step == 1) {
        std::memcpy(o, from, n * sizeof(uint32_t));
      } else if (step == 0) {
        std::fill(o, o + n, *from);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = from[i * step];
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = k[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
  });
}

namespace {

// Copies element words of type W (the dtype's size) along the plan.
template <typename W>
void broadcast_words(const HostTensor& x, HostTensor& out, const StridedPlan<2>& plan) {
  const W* px = static_cast<const W*>(x.raw_data());
  W* po = static_cast<W*>(out.raw_data());
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    W* o = po + off[0];
    const W* i = px + off[1];
    if (s[1] == 1) {
      std::memcpy(o, i, n * sizeof(W));
    } else if (s[1] == 0) {
      const W v = *i;
      for (int64_t k = 0; k < n; ++k) o[k] = v;
    } else {
      for (int64_t k = 0; k < n; ++k) o[k] = i[k * s[1]];
    }
  });
}

}  // namespace

void broadcast_copy(const HostTensor& x, HostTensor& out) {
  MTF_CHECK(x.dtype() == out.dtype());
  const auto names = out.shape().names();
  auto plan = make_plan<2>(
      out.shape().sizes(),
      {out.shape().strides(), strides_along(names, x.shape().names(), x.shape().strides())});
  if (dtype_size(x.dtype()) == 1) return broadcast_words<uint8_t>(x, out, plan);
  if (dtype_size(x.dtype()) == 2) return broadcast_words<uint16_t>(x, out, plan);
  MTF_CHECK(dtype_size(x.dtype()) == 4);
  broadcast_words<uint32_t>(x, out, plan);
}

void fill(HostTensor& out, float value) {
  const int64_t n = out.num_elements();
  if (out.dtype() == bool_) {
    if (n) std::memset(out.raw_data(), value != 0.0f, static_cast<size_t>(n));
    return;
  }
  if (out.dtype() == bfloat16) {
    const BFloat16 v(value);
    BFloat16* p = out.data<BFloat16>();
    for (int64_t i = 0; i < n; ++i) p[i] = v;
    return;
  }
  require_supported(out, true, "fill");
  if (out.dtype() == float32) {
    float* p = out.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = value;
  } else {
    int32_t* p = out.data<int32_t>();
    const int32_t v = static_cast<int32_t>(value);
    for (int64_t i = 0; i < n; ++i) p[i] = v;
  }
}

}  // namespace mtf::kernels
