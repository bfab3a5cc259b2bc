// bfloat16 conversion: round to nearest even against a reference computed in
// double arithmetic, over every bfloat16 value and the float32 values around
// each rounding boundary; NaN, infinity and subnormals; the vector path
// bit-identical to the portable one; HostTensor's bfloat16 storage.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/bfloat16_convert.h"
#include "mtf/errors.h"
#include "mtf/host_tensor.h"

namespace mtf {
namespace {

float float_of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even by comparing distances in double: the bfloat16
// candidates below and above |x| (the one above may be infinity, whose
// "value" for rounding is 2^128, as IEEE-754 rounds overflow).
uint16_t reference_round(uint32_t u) {
  const float x = float_of_bits(u);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  const uint32_t lo = mag & 0xffff0000u, hi = lo + 0x10000u;
  if (mag == lo) return static_cast<uint16_t>((sign | lo) >> 16);
  const double v = std::fabs(static_cast<double>(x));
  const double lo_v = static_cast<double>(float_of_bits(lo));
  const double hi_v = hi >= 0x7f800000u ? std::ldexp(1.0, 128) : float_of_bits(hi);
  uint32_t pick;
  if (v - lo_v < hi_v - v) {
    pick = lo;
  } else if (v - lo_v > hi_v - v) {
    pick = hi;
  } else {
    pick = ((lo >> 16) & 1u) ? hi : lo;
  }
  return static_cast<uint16_t>((sign | pick) >> 16);
}

std::vector<uint32_t> boundary_floats() {
  std::vector<uint32_t> v;
  const uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff,
                           0x8000, 0x8001, 0xbfff, 0xfffe, 0xffff};
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : lows) v.push_back(high << 16 | low);
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) v.push_back(static_cast<uint32_t>(rng()));
  return v;
}

TEST(BFloat16, RoundsToNearestEvenAroundEveryBoundary) {
  const std::vector<uint32_t> bits = boundary_floats();
  for (uint32_t u : bits)
    ASSERT_EQ(float_to_bfloat16_bits(float_of_bits(u)), reference_round(u)) << std::hex << u;
}

TEST(BFloat16, SpecialValues) {
  auto round = [](float f) { return float_to_bfloat16_bits(f); };
  EXPECT_EQ(round(0.0f), 0x0000);
  EXPECT_EQ(round(-0.0f), 0x8000);
  EXPECT_EQ(round(INFINITY), 0x7f80);
  EXPECT_EQ(round(-INFINITY), 0xff80);
  EXPECT_EQ(round(1.0f), 0x3f80);
  EXPECT_EQ(round(3.4e38f), 0x7f80);  // above the largest bfloat16 + half an ulp: infinity
  EXPECT_EQ(round(float_of_bits(0x7f7f7fffu)), 0x7f7f);    // just below the midpoint: the largest
  EXPECT_EQ(round(float_of_bits(0x00000001u)), 0x0000);    // the smallest subnormal: to zero
  EXPECT_EQ(round(float_of_bits(0x00018000u)), 0x0002);    // a subnormal tie: to even, not flushed
  const uint16_t nan = round(float_of_bits(0x7f800001u));  // a signalling NaN becomes quiet
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(nan)));
  EXPECT_EQ(nan & 0x40, 0x40);
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(round(-NAN))));
  EXPECT_EQ(round(-NAN) & 0x8000, 0x8000);
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every bfloat16 survives the round trip
    const float f = bfloat16_bits_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(round(f), b) << std::hex << b;
    }
  }
}

// The vector paths this CPU runs: AVX-512F's integer rounding, and
// AVX512-BF16's instruction when the CPU has it and it passed its self-check.
std::vector<Bf16ConvertPath> vector_paths() {
  std::vector<Bf16ConvertPath> paths;
  if (bf16_convert_path() == Bf16ConvertPath::kPortable) return paths;
  paths.push_back(Bf16ConvertPath::kAvx512);
  if (bf16_convert_path() == Bf16ConvertPath::kAvx512Bf16)
    paths.push_back(Bf16ConvertPath::kAvx512Bf16);
  return paths;
}

TEST(BFloat16, VectorPathsGiveThePortableBits) {
  if (vector_paths().empty()) GTEST_SKIP() << "no AVX-512F here";
  const std::vector<uint32_t> bits = boundary_floats();
  std::vector<float> in(bits.size());
  std::memcpy(in.data(), bits.data(), bits.size() * sizeof(float));
  for (Bf16ConvertPath path : vector_paths()) {
    SCOPED_TRACE(path == Bf16ConvertPath::kAvx512 ? "AVX-512F" : "AVX512-BF16");
    for (int64_t n :
         {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{17}, static_cast<int64_t>(in.size())}) {
      std::vector<uint16_t> portable(n), vector(n);
      floats_to_bfloat16(in.data(), portable.data(), n, Bf16ConvertPath::kPortable);
      floats_to_bfloat16(in.data(), vector.data(), n, path);
      ASSERT_EQ(portable, vector) << n;
      std::vector<float> back_p(n), back_v(n);
      bfloat16_to_floats(portable.data(), back_p.data(), n, Bf16ConvertPath::kPortable);
      bfloat16_to_floats(portable.data(), back_v.data(), n, path);
      if (n > 0) {  // memcmp of empty vectors would read null pointers
        ASSERT_EQ(std::memcmp(back_p.data(), back_v.data(), n * sizeof(float)), 0) << n;
        // Rounding in place: the round trip's bits.
        std::vector<float> x(in.begin(), in.begin() + n);
        round_floats_to_bfloat16(x.data(), n, path);
        ASSERT_EQ(std::memcmp(x.data(), back_p.data(), n * sizeof(float)), 0) << n;
      }
    }
  }
}

TEST(BFloat16, HostTensorStoresTwoBytesAnElement) {
  const Shape shape({Dimension{"a", 3}});
  const HostTensor t = HostTensor::from_floats(shape, {1.0f, 1.00390625f, -2.5e-3f}, bfloat16);
  EXPECT_EQ(t.dtype(), bfloat16);
  EXPECT_EQ(t.num_bytes(), 6u);
  EXPECT_EQ(t.data<BFloat16>()[0].bits, 0x3f80);
  EXPECT_EQ(t.data<BFloat16>()[1].bits, 0x3f80);  // 1 + 2^-8 is a tie: to even, 1
  const std::vector<float> back = t.to_floats();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_NEAR(back[2], -2.5e-3f, 2.5e-3f / 128);
  EXPECT_EQ(t.as_dtype(float32).to_floats(), back);
  EXPECT_EQ(t.as_dtype(float32).as_dtype(bfloat16).data<BFloat16>()[2].bits,
            t.data<BFloat16>()[2].bits);
  EXPECT_THROW(t.data<float>(), DTypeError);
  EXPECT_THROW(HostTensor::from_floats(shape, {1, 2, 3}, int32), DTypeError);
}

}  // namespace
}  // namespace mtf
