// sum_of_squares: out = the sum, over the dimensions out lacks, of the
// square of a product of factors broadcast by name into the first's shape
// (the first float32 or bfloat16, the others float32), in one pass over the
// first factor: neither the product nor its square reaches memory (an
// optimizer's statistics of a gradient).
#include <algorithm>
#include <array>

#include "core/check.h"
#include "kernels/arithmetic.h"
#include "kernels/blas_threads.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"
#include "kernels/thread_split.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

constexpr int kMaxFactors = 3;
constexpr int kOperands = kMaxFactors + 1;  // out, then the factors
constexpr int kLanes = 16;

// A row of the sum: terms (f0[i] * f1[i * kS1] * f2[i * kS2])^2 for i < n
// (f0 contiguous; factors past kFactors unread), added into o[i * kSo].
// With kSo 0 the row adds into one value: in order (fixed_order), or on
// kLanes partial sums. Compile-time strides: the loops vectorize.
template <int kFactors, int kS1, int kS2, int kSo, typename T0>
void row_sum(const T0* f0, const float* f1, const float* f2, int64_t n, float* o,
             bool fixed_order) {
  auto term = [&](int64_t i) {
    float v = element(f0, i);
    if constexpr (kFactors > 1) v *= f1[i * kS1];
    if constexpr (kFactors > 2) v *= f2[i * kS2];
    return v * v;
  };
  if constexpr (kSo == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] += term(i);
  } else {
    if (fixed_order) {
      float acc = *o;
      for (int64_t i = 0; i < n; ++i) acc += term(i);
      *o = acc;
      return;
    }
    float acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += term(i + k);
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
    float r = acc[0];
    for (; i < n; ++i) r += term(i);
    *o += r;
  }
}

template <int kFactors, int kS1, int kS2, typename T0>
void row_out(const T0* f0, const float* f1, const float* f2, int64_t n, float* o, int64_t so,
             bool fixed_order) {
  if (so == 0) return row_sum<kFactors, kS1, kS2, 0>(f0, f1, f2, n, o, fixed_order);
  row_sum<kFactors, kS1, kS2, 1>(f0, f1, f2, n, o, fixed_order);
}

// One row, strides s (out, f0, f1, f2); the general case element by element.
template <int kFactors, typename T0>
void row(const T0* f0, const float* f1, const float* f2, int64_t n, float* o, const int64_t* s,
         bool fixed_order) {
  const bool unit = s[1] == 1 && (s[0] == 0 || s[0] == 1) && (kFactors < 2 || s[2] <= 1) &&
                    (kFactors < 3 || s[3] <= 1);
  if (!unit) {
    for (int64_t i = 0; i < n; ++i) {
      float v = element(f0, i * s[1]);
      if constexpr (kFactors > 1) v *= f1[i * s[2]];
      if constexpr (kFactors > 2) v *= f2[i * s[3]];
      o[i * s[0]] += v * v;
    }
    return;
  }
  const int64_t s1 = kFactors > 1 ? s[2] : 0, s2 = kFactors > 2 ? s[3] : 0;
  if (s1 == 1 && s2 == 1) return row_out<kFactors, 1, 1>(f0, f1, f2, n, o, s[0], fixed_order);
  if (s1 == 1) return row_out<kFactors, 1, 0>(f0, f1, f2, n, o, s[0], fixed_order);
  if (s2 == 1) return row_out<kFactors, 0, 1>(f0, f1, f2, n, o, s[0], fixed_order);
  row_out<kFactors, 0, 0>(f0, f1, f2, n, o, s[0], fixed_order);
}

// Sums over `sizes` (the first factor's, possibly a part of them) into out.
// fixed_order: every output element adds its terms one by one in row-major
// order (so a slice gives what the whole gives).
template <int kFactors, typename T0>
void sum_into(const std::vector<int64_t>& sizes,
              const std::array<std::vector<int64_t>, kOperands>& strides, const T0* f0,
              const float* f1, const float* f2, float* out, bool fixed_order) {
  const auto plan = make_plan<kOperands>(sizes, strides);
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    row<kFactors>(f0 + off[1], f1 ? f1 + off[2] : nullptr, f2 ? f2 + off[3] : nullptr, n,
                  out + off[0], s, fixed_order);
  });
}

template <typename T0>
void sum_factors(size_t factors, const std::vector<int64_t>& sizes,
                 const std::array<std::vector<int64_t>, kOperands>& strides, const T0* f0,
                 const float* f1, const float* f2, float* out, bool fixed_order) {
  if (factors == 1) return sum_into<1>(sizes, strides, f0, f1, f2, out, fixed_order);
  if (factors == 2) return sum_into<2>(sizes, strides, f0, f1, f2, out, fixed_order);
  sum_into<3>(sizes, strides, f0, f1, f2, out, fixed_order);
}

}  // namespace

void sum_of_squares(const std::vector<const HostTensor*>& factors, HostTensor& out,
                    bool fixed_order) {
  MTF_CHECK(!factors.empty() && factors.size() <= kMaxFactors && out.dtype() == float32);
  const Shape& space = factors[0]->shape();
  const auto names = space.names();
  std::array<std::vector<int64_t>, kOperands> strides;
  strides[0] = strides_along(names, out.shape().names(), out.shape().strides());
  std::array<const void*, kMaxFactors> base{};
  for (int k = 0; k < kMaxFactors; ++k) {
    if (k < static_cast<int>(factors.size())) {
      MTF_CHECK(factors[k]->dtype() == float32 || (k == 0 && factors[k]->dtype() == bfloat16));
      strides[k + 1] =
          strides_along(names, factors[k]->shape().names(), factors[k]->shape().strides());
      base[k] = factors[k]->raw_data();
    } else {
      strides[k + 1].assign(names.size(), 0);
    }
  }
  const bool bf16 = factors[0]->dtype() == bfloat16;
  float* const po = out.data<float>();
  std::fill(po, po + out.num_elements(), 0.f);
  const std::vector<int64_t> sizes = space.sizes();
  // The sum over `part` of the space, starting `r0` positions along `axis`.
  auto run = [&](const std::vector<int64_t>& part, int axis, int64_t r0) {
    auto at = [&](int k, size_t width) {
      return static_cast<const char*>(base[k]) +
             (axis < 0 ? 0 : r0 * strides[k + 1][axis] * static_cast<int64_t>(width));
    };
    const float* f1 = base[1] ? reinterpret_cast<const float*>(at(1, 4)) : nullptr;
    const float* f2 = base[2] ? reinterpret_cast<const float*>(at(2, 4)) : nullptr;
    float* o = po + (axis < 0 ? 0 : r0 * strides[0][axis]);
    if (bf16) {
      sum_factors(factors.size(), part, strides, reinterpret_cast<const uint16_t*>(at(0, 2)), f1,
                  f2, o, fixed_order);
    } else {
      sum_factors(factors.size(), part, strides, reinterpret_cast<const float*>(at(0, 4)), f1, f2,
                  o, fixed_order);
    }
  };
  // Threads split an axis the output keeps (thread_split.h).
  const int threads = threads_for(space.num_elements(), kernel_threads());
  const int axis = split_axis(sizes, threads, &strides[0]);
  if (axis < 0) return run(sizes, -1, 0);
  run_on_threads(sizes, axis, threads,
                 [&](const std::vector<int64_t>& part, int64_t r0) { run(part, axis, r0); });
}

}  // namespace mtf::kernels
