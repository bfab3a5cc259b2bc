// Reductions by dimension name: sum, max, min over the dimensions of x that
// out lacks. The summation order is fixed by the shapes alone, so a run is
// bit-for-bit repeatable; with fixed_order it is fixed by the reduced
// dimensions alone (each element sums its inputs in row-major order), so a
// slice of x sums each element exactly as the whole would.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/blas_threads.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"
#include "kernels/thread_split.h"
#include "kernels/vector_lanes.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

template <typename T>
T identity_of(ReduceFn fn) {
  switch (fn) {
    case ReduceFn::kSum:
      return T(0);
    case ReduceFn::kMax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case ReduceFn::kMin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
  }
  return T(0);
}

// An element of x as the accumulator's type: bfloat16 (stored as its bits)
// widens to float32 exactly.
template <typename T, typename TI>
inline T element(const TI* p, int64_t i) {
  if constexpr (std::is_same_v<TI, uint16_t>) {
    return bfloat16_bits_to_float(p[i]);
  } else {
    return p[i];
  }
}

// The row reduction of reduce_strided's unordered path — kRowLanes partial
// results, combined in a halving tree, then the rest of the row one by one —
// on four 16-lane vectors: the same operations in the same order, so the
// same bits, without the compiler's scalar tree (which cost more than the
// row itself for softmax's rows of 128).
constexpr int kRowLanes = 64;

#if defined(__x86_64__)
// op(a, b) on lanes, as the scalar ops in reduce_into: sum, or max / min
// where b wins when it is larger / smaller or NaN.
template <ReduceFn kFn>
MTF_LANES_TARGET inline __m512 lanes_op(__m512 a, __m512 b) {
  if constexpr (kFn == ReduceFn::kSum) {
    return _mm512_add_ps(a, b);
  } else {
    constexpr int kWins = kFn == ReduceFn::kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
    const __mmask16 take_b =
        _mm512_cmp_ps_mask(b, a, kWins) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take_b, a, b);
  }
}

template <ReduceFn kFn, typename TI, typename Op>
MTF_LANES_TARGET float reduce_row_lanes(const TI* in, int64_t n, float init, Op op) {
  static_assert(kRowLanes == 64);
  __m512 a0 = _mm512_set1_ps(init), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + kRowLanes <= n; i += kRowLanes) {
    a0 = lanes_op<kFn>(a0, lanes(in + i));
    a1 = lanes_op<kFn>(a1, lanes(in + i + 16));
    a2 = lanes_op<kFn>(a2, lanes(in + i + 32));
    a3 = lanes_op<kFn>(a3, lanes(in + i + 48));
  }
  a0 = lanes_op<kFn>(lanes_op<kFn>(a0, a2), lanes_op<kFn>(a1, a3));  // widths 32 and 16
  // Widths 8, 4, 2 and 1: lane k with lane k + w, by moving the upper
  // lanes down in registers; a scalar tree through memory made each row of
  // 128 (softmax's, attention's) pay a store and 15 dependent loads and
  // ops. The zero-masked forms with every lane kept: the plain ones start
  // from an undefined vector GCC 12 warns about.
  constexpr __mmask16 kAll = 0xFFFF;
  a0 = lanes_op<kFn>(a0, _mm512_maskz_shuffle_f32x4(kAll, a0, a0, _MM_SHUFFLE(3, 2, 3, 2)));
  a0 = lanes_op<kFn>(a0, _mm512_maskz_shuffle_f32x4(kAll, a0, a0, _MM_SHUFFLE(1, 1, 1, 1)));
  a0 = lanes_op<kFn>(a0, _mm512_maskz_permute_ps(kAll, a0, _MM_SHUFFLE(3, 2, 3, 2)));
  a0 = lanes_op<kFn>(a0, _mm512_maskz_permute_ps(kAll, a0, _MM_SHUFFLE(1, 1, 1, 1)));
  float r = _mm512_cvtss_f32(a0);
  for (; i < n; ++i) r = op(r, element<float>(in, i));
  return r;
}
#endif

// The vector form of a row reduction for this op, or null (then the scalar
// loop runs).
template <typename T, typename TI, typename Op>
using RowLanes = float (*)(const TI*, int64_t, float, Op);

template <typename T, typename TI, typename Op>
RowLanes<T, TI, Op> row_lanes_for(ReduceFn fn) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (!has_avx512_lanes()) return nullptr;
    switch (fn) {
      case ReduceFn::kSum:
        return &reduce_row_lanes<ReduceFn::kSum, TI, Op>;
      case ReduceFn::kMax:
        return &reduce_row_lanes<ReduceFn::kMax, TI, Op>;
      case ReduceFn::kMin:
        return &reduce_row_lanes<ReduceFn::kMin, TI, Op>;
    }
  }
#endif
  (void)fn;
  return nullptr;
}

// A row of n inputs in[0..n) reduced into *o, which holds the value so far.
// sequential: one by one in order; otherwise on kRowLanes partial results
// (row_lanes' vectors where given).
template <typename T, typename TI, typename Op>
inline void reduce_row_into(const TI* in, int64_t n, T* o, T init, Op op, bool sequential,
                            RowLanes<T, TI, Op> row_lanes) {
  if (sequential) {
    T acc = *o;
    for (int64_t i = 0; i < n; ++i) acc = op(acc, element<T>(in, i));
    *o = acc;
  } else if (row_lanes) {
    *o = op(*o, row_lanes(in, n, init, op));
  } else {
    // kLanes partial results let the compiler vectorize without
    // reassociating across them, and are several vectors wide so that their
    // adds overlap instead of waiting on each other's latency (8 lanes ran
    // at a third of this speed).
    constexpr int kLanes = kRowLanes;
    T acc[kLanes];
    for (auto& a : acc) a = init;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] = op(acc[k], element<T>(in, i + k));
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
    T r = acc[0];
    for (; i < n; ++i) r = op(r, element<T>(in, i));
    *o = op(*o, r);
  }
}

// sequential: every output element accumulates its inputs one by one in
// row-major order of x's dimensions (no partial results per row). out
// accumulates into the values it holds. TI: x's element type (T, or
// uint16_t for bfloat16 x summed in float32 T).
template <typename T, typename TI, typename Op>
void reduce_strided(ReduceFn fn, const std::vector<int64_t>& sizes, const TI* px,
                    const std::vector<int64_t>& x_strides, T* po,
                    const std::vector<int64_t>& out_strides, T init, Op op, bool sequential) {
  auto plan = make_plan<2>(sizes, {x_strides, out_strides});
  const RowLanes<T, TI, Op> row_lanes = sequential ? nullptr : row_lanes_for<T, TI, Op>(fn);
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    const TI* in = px + off[0];
    T* o = po + off[1];
    if (s[1] == 0) {
      reduce_row_into(in, n, o, init, op, sequential, s[0] == 1 ? row_lanes : nullptr);
    } else if (s[1] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = op(o[i], element<T>(in, i));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * s[1]] = op(o[i * s[1]], element<T>(in, i));
    }
  });
}

// out <- fn(out, x) over the strided arrays, with fn's operation picked
// once; sums go in fixed order when asked (max and min are exact in any, and
// NaN wins them, as in NumPy).
template <typename T>
struct SumOp {
  T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct MaxOp {
  T operator()(T a, T b) const { return b > a || b != b ? b : a; }
};
template <typename T>
struct MinOp {
  T operator()(T a, T b) const { return b < a || b != b ? b : a; }
};

template <typename T, typename TI = T>
void reduce_into(ReduceFn fn, const std::vector<int64_t>& sizes, const TI* x,
                 const std::vector<int64_t>& x_strides, T* out,
                 const std::vector<int64_t>& out_strides, bool fixed_order) {
  const T init = identity_of<T>(fn);
  switch (fn) {
    case ReduceFn::kSum:
      return reduce_strided<T, TI>(fn, sizes, x, x_strides, out, out_strides, init, SumOp<T>{},
                                   fixed_order);
    case ReduceFn::kMax:
      return reduce_strided<T, TI>(fn, sizes, x, x_strides, out, out_strides, init, MaxOp<T>{},
                                   false);
    case ReduceFn::kMin:
      return reduce_strided<T, TI>(fn, sizes, x, x_strides, out, out_strides, init, MinOp<T>{},
                                   false);
  }
}

// One contiguous row as reduce_strided reduces it.
template <typename Op>
float reduce_one_row(ReduceFn fn, const float* x, int64_t n, Op op, bool sequential) {
  const float init = identity_of<float>(fn);
  float o = init;
  reduce_row_into<float, float, Op>(x, n, &o, init, op, sequential,
                                    sequential ? nullptr : row_lanes_for<float, float, Op>(fn));
  return o;
}

// Reduces x into out (filled with fn's identity first). With
// kernel_threads() > 1 and enough elements, x's outermost kept axis long
// enough is cut into one part per OpenMP thread: each output element is then
// reduced whole by one thread in the same order, so the bits do not depend
// on the threads.
template <typename T, typename TI = T>
void reduce_dispatch(ReduceFn fn, const HostTensor& x, HostTensor& out, bool fixed_order) {
  T* po = static_cast<T*>(out.raw_data());
  std::fill(po, po + out.num_elements(), identity_of<T>(fn));
  const TI* px = static_cast<const TI*>(x.raw_data());
  const std::vector<int64_t> sizes = x.shape().sizes(), xs = x.shape().strides();
  const std::vector<int64_t> os =
      strides_along(x.shape().names(), out.shape().names(), out.shape().strides());
  const int threads = threads_for(x.num_elements(), kernel_threads());
  const int axis = split_axis(sizes, threads, &os);
  if (axis < 0) return reduce_into<T, TI>(fn, sizes, px, xs, po, os, fixed_order);
  run_on_threads(sizes, axis, threads, [&](const std::vector<int64_t>& part, int64_t r0) {
    reduce_into<T, TI>(fn, part, px + r0 * xs[axis], xs, po + r0 * os[axis], os, fixed_order);
  });
}

}  // namespace

float reduce_identity(ReduceFn fn) { return identity_of<float>(fn); }

float reduce_row(ReduceFn fn, const float* x, int64_t n, bool fixed_order) {
  switch (fn) {
    case ReduceFn::kSum:
      return reduce_one_row(fn, x, n, SumOp<float>{}, fixed_order);
    case ReduceFn::kMax:
      return reduce_one_row(fn, x, n, MaxOp<float>{}, false);
    case ReduceFn::kMin:
      return reduce_one_row(fn, x, n, MinOp<float>{}, false);
  }
  return 0;
}

const char* reduce_name(ReduceFn fn) {
  switch (fn) {
    case ReduceFn::kSum:
      return "reduce_sum";
    case ReduceFn::kMax:
      return "reduce_max";
    case ReduceFn::kMin:
      return "reduce_min";
  }
  return "reduce";
}

void reduce_float_into(ReduceFn fn, const std::vector<int64_t>& sizes, const float* x,
                       const std::vector<int64_t>& x_strides, float* out,
                       const std::vector<int64_t>& out_strides, bool fixed_order) {
  reduce_into<float>(fn, sizes, x, x_strides, out, out_strides, fixed_order);
}

void combine(ReduceFn fn, const HostTensor& x, HostTensor& acc) {
  MTF_CHECK(x.shape() == acc.shape() && x.dtype() == acc.dtype());
  const BinaryFn b = fn == ReduceFn::kSum
                         ? BinaryFn::kAdd
                         : (fn == ReduceFn::kMax ? BinaryFn::kMax : BinaryFn::kMin);
  binary(b, acc, x, acc);
}

void reduce(ReduceFn fn, const HostTensor& x, HostTensor& out, bool fixed_order) {
  if (x.dtype() == bfloat16) {
    // Read as it is, summed in float32: the bits of reducing a float32 copy.
    MTF_CHECK(out.dtype() == float32 || out.dtype() == bfloat16);
    if (out.dtype() == float32) return reduce_dispatch<float, uint16_t>(fn, x, out, fixed_order);
    HostTensor sums(out.shape(), float32);
    reduce_dispatch<float, uint16_t>(fn, x, sums, fixed_order);
    floats_to_bfloat16(sums.data<float>(), reinterpret_cast<uint16_t*>(out.data<BFloat16>()),
                       out.num_elements());
    return;
  }
  require_supported(x, true, "reduce");
  MTF_CHECK(x.dtype() == out.dtype());
  if (x.dtype() == float32) {
    reduce_dispatch<float>(fn, x, out, fixed_order);
  } else {
    reduce_dispatch<int32_t>(fn, x, out, false);
  }
}

}  // namespace mtf::kernels
