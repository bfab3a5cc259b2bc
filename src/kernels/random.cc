// Random kernels keyed by logical element index (see philox.h).
#include <cmath>

#include "core/check.h"
#include "kernels/kernels.h"
#include "kernels/philox.h"
#include "kernels/philox_lanes.h"

namespace mtf::kernels {
namespace {

// Calls row(slice_position, logical_index, n) for every innermost row of
// the slice: its n elements sit at consecutive slice positions and have
// consecutive logical indices (row-major strides end in 1).
template <typename Row>
void for_each_logical_row(const Shape& full, const Shape& slice, const std::vector<int64_t>& offset,
                          Row row) {
  const int nd = full.ndims();
  MTF_CHECK(slice.ndims() == nd && static_cast<int>(offset.size()) == nd);
  const int64_t n = slice.num_elements();
  if (n == 0) return;
  const auto fs = full.strides();
  int64_t logical = 0;
  for (int d = 0; d < nd; ++d) logical += offset[d] * fs[d];
  if (nd == 0) return row(int64_t{0}, logical, int64_t{1});
  const int64_t len = slice[nd - 1].size;
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; i += len) {
    row(i, logical, len);
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < slice[d].size) {
        logical += fs[d];
        break;
      }
      logical -= fs[d] * (slice[d].size - 1);
      idx[d] = 0;
    }
  }
}

// Calls f(slice_position, logical_index) for every element of the slice.
template <typename F>
void for_each_logical(const Shape& full, const Shape& slice, const std::vector<int64_t>& offset,
                      F f) {
  for_each_logical_row(full, slice, offset, [&](int64_t i, int64_t logical, int64_t n) {
    for (int64_t k = 0; k < n; ++k) f(i + k, logical + k);
  });
}

std::array<uint32_t, 4> draw(uint64_t seed, uint64_t run, int64_t logical, uint32_t attempt) {
  const uint64_t li = static_cast<uint64_t>(logical);
  return philox4x32(
      {static_cast<uint32_t>(li), static_cast<uint32_t>(li >> 32), static_cast<uint32_t>(run),
       static_cast<uint32_t>(run >> 32) ^ (attempt << 20)},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// lo + (hi - lo) * u, rounded once (the same bits whether or not the
// compiler would have contracted it).
inline float uniform_at(uint32_t word, float lo, float width) {
  return std::fma(uint_to_unit(word), width, lo);
}

// random_uniform's values for logical indices first .. first + n - 1.
void uniform_row(uint64_t seed, uint64_t run, int64_t first, int64_t n, float lo, float width,
                 float* out) {
  int64_t k = 0;
#if defined(__x86_64__)
  if (has_avx512_lanes()) k = philox_uniform_lanes(seed, run, first, n, lo, width, out);
#endif
  for (; k < n; ++k) out[k] = uniform_at(draw(seed, run, first + k, 0)[0], lo, width);
}

}  // namespace

void random_uniform(uint64_t seed, uint64_t run, const Shape& full,
                    const std::vector<int64_t>& offset, float lo, float hi, HostTensor& out) {
  require_supported(out, false, "random_uniform");
  float* p = out.data<float>();
  for_each_logical_row(full, out.shape(), offset, [&](int64_t i, int64_t logical, int64_t n) {
    uniform_row(seed, run, logical, n, lo, hi - lo, p + i);
  });
}

void random_normal(uint64_t seed, uint64_t run, const Shape& full,
                   const std::vector<int64_t>& offset, float mean, float stddev, bool truncated,
                   HostTensor& out) {
  require_supported(out, false, "random_normal");
  float* p = out.data<float>();
  constexpr float kTwoPi = 6.283185307179586f;
  for_each_logical(full, out.shape(), offset, [&](int64_t i, int64_t logical) {
    float z = 0.f;
    for (uint32_t attempt = 0;; ++attempt) {
      const auto w = draw(seed, run, logical, attempt);
      const float u1 = (static_cast<float>(w[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
      const float u2 = uint_to_unit(w[1]);
      z = std::sqrt(-2.0f * std::log(u1)) * std::cos(kTwoPi * u2);
      if (!truncated || std::fabs(z) <= 2.0f) break;
    }
    p[i] = mean + stddev * z;
  });
}

}  // namespace mtf::kernels
