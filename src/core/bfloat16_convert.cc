#include "core/bfloat16_convert.h"

#include <immintrin.h>

#include <vector>

#include "mtf/bfloat16.h"

// GCC 12's shift and convert intrinsics pass _mm512_undefined_epi32() as
// their (unused) merge source, which -Wmaybe-uninitialized mistakes for a
// read of an uninitialized value (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mtf {
namespace {

void to_bf16_portable(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_bfloat16_bits(in[i]);
}

void round_portable(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bfloat16_bits_to_float(float_to_bfloat16_bits(x[i]));
}

void to_float_portable(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bfloat16_bits_to_float(in[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void to_bf16_avx512(const float* in, uint16_t* out, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x0040);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(in + i);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);
    const __m512i nan_bits = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
    const __m512i r = _mm512_mask_blend_epi32(nan, rounded, nan_bits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(r));
  }
  to_bf16_portable(in + i, out + i, n - i);
}

// The rounded bits of 16 floats, in the high half of each lane.
__attribute__((target("avx512f"))) inline __m512i rounded_high(__m512i u) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x00400000);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(bias, lsb));
  const __m512i r = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(u, quiet));
  return _mm512_and_si512(r, high);
}

__attribute__((target("avx512f"))) void round_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_si512(y + i, rounded_high(_mm512_loadu_si512(x + i)));
  round_portable(x + i, y + i, n - i);
}

__attribute__((target("avx512f"))) void to_float_avx512(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_si512(out + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  }
  to_float_portable(in + i, out + i, n - i);
}

// AVX512-BF16's VCVTNEPS2BF16 rounds to nearest even and quiets NaN as the
// integer rounding does, but treats subnormal inputs as zero: lanes holding
// one (exponent 0, fraction not 0; rare) take the integer rounding instead.
#define MTF_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// The 16 bfloat16 results of 16 floats, in the low half of each lane.
MTF_BF16_TARGET inline __m512i bf16_lanes(__m512i u) {
  const __m512i expo = _mm512_set1_epi32(0x7f800000);
  const __m512i frac = _mm512_set1_epi32(0x007fffff);
  const __m256bh h = _mm512_cvtneps_pbh(_mm512_castsi512_ps(u));
  __m512i r = _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(h));
  const __mmask16 subnormal = _mm512_testn_epi32_mask(u, expo) & _mm512_test_epi32_mask(u, frac);
  if (__builtin_expect(subnormal != 0, 0))
    r = _mm512_mask_blend_epi32(subnormal, r, _mm512_srli_epi32(rounded_high(u), 16));
  return r;
}

MTF_BF16_TARGET void to_bf16_avx512bf16(const float* in, uint16_t* out, int64_t n) {
  const __m512i expo = _mm512_set1_epi32(0x7f800000);
  const __m512i frac = _mm512_set1_epi32(0x007fffff);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(in + i);
    __m256i* const to = reinterpret_cast<__m256i*>(out + i);
    const __mmask16 subnormal = _mm512_testn_epi32_mask(u, expo) & _mm512_test_epi32_mask(u, frac);
    if (__builtin_expect(subnormal == 0, 1)) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_castsi512_ps(u));
      _mm256_storeu_si256(to, reinterpret_cast<const __m256i&>(h));
    } else {
      _mm256_storeu_si256(to, _mm512_cvtepi32_epi16(bf16_lanes(u)));
    }
  }
  to_bf16_portable(in + i, out + i, n - i);
}

MTF_BF16_TARGET void round_avx512bf16(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(bf16_lanes(_mm512_loadu_si512(x + i)), 16));
  round_portable(x + i, y + i, n - i);
}
#undef MTF_BF16_TARGET

// True when the VCVTNEPS2BF16 path gives the integer rounding's bits on
// this CPU for every kind of input (ties either way, carries into the
// exponent, the largest finite values, infinities, NaN payloads, subnormals,
// zeros): the instruction's rounding is the vendor's, so it is checked
// before it is trusted.
bool bf16_instruction_agrees() {
  std::vector<float> in;
  for (uint32_t high = 0; high < 0x10000; high += 7)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      in.push_back(__builtin_bit_cast(float, (high << 16) | low));
  for (uint32_t high : {0x0000u, 0x0080u, 0x7f7fu, 0x7f80u, 0x7fc0u, 0xff80u, 0xffc0u, 0x8000u})
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      in.push_back(__builtin_bit_cast(float, (high << 16) | low));
  uint32_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    state = state * 1664525u + 1013904223u;
    in.push_back(__builtin_bit_cast(float, state));
  }
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> want(in.size()), got(in.size());
  to_bf16_avx512(in.data(), want.data(), n);
  to_bf16_avx512bf16(in.data(), got.data(), n);
  std::vector<float> rounded = in;
  round_avx512bf16(rounded.data(), rounded.data(), n);
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != want[i] ||
        __builtin_bit_cast(uint32_t, rounded[i]) != static_cast<uint32_t>(want[i]) << 16)
      return false;
  return true;
}
#endif

}  // namespace

Bf16ConvertPath bf16_convert_path() {
#if defined(__x86_64__)
  static const Bf16ConvertPath path = [] {
    if (!__builtin_cpu_supports("avx512f")) return Bf16ConvertPath::kPortable;
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && bf16_instruction_agrees())
      return Bf16ConvertPath::kAvx512Bf16;
    return Bf16ConvertPath::kAvx512;
  }();
  return path;
#else
  return Bf16ConvertPath::kPortable;
#endif
}

void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n, Bf16ConvertPath path) {
#if defined(__x86_64__)
  if (path == Bf16ConvertPath::kAvx512Bf16) return to_bf16_avx512bf16(in, out, n);
  if (path == Bf16ConvertPath::kAvx512) return to_bf16_avx512(in, out, n);
#endif
  (void)path;
  to_bf16_portable(in, out, n);
}

void bfloat16_to_floats(const uint16_t* in, float* out, int64_t n, Bf16ConvertPath path) {
#if defined(__x86_64__)
  if (path != Bf16ConvertPath::kPortable) return to_float_avx512(in, out, n);
#endif
  (void)path;
  to_float_portable(in, out, n);
}

void round_floats_to_bfloat16(const float* x, float* y, int64_t n, Bf16ConvertPath path) {
#if defined(__x86_64__)
  if (path == Bf16ConvertPath::kAvx512Bf16) return round_avx512bf16(x, y, n);
  if (path == Bf16ConvertPath::kAvx512) return round_avx512(x, y, n);
#endif
  (void)path;
  round_portable(x, y, n);
}

void round_floats_to_bfloat16(float* x, int64_t n, Bf16ConvertPath path) {
  round_floats_to_bfloat16(x, x, n, path);
}

void round_floats_to_bfloat16(float* x, int64_t n) {
  round_floats_to_bfloat16(x, x, n, bf16_convert_path());
}

void round_floats_to_bfloat16(const float* x, float* y, int64_t n) {
  round_floats_to_bfloat16(x, y, n, bf16_convert_path());
}

void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n) {
  floats_to_bfloat16(in, out, n, bf16_convert_path());
}

void bfloat16_to_floats(const uint16_t* in, float* out, int64_t n) {
  bfloat16_to_floats(in, out, n, bf16_convert_path());
}

}  // namespace mtf
