// bfloat16 contractions: on the bfloat16 instructions (oneDNN) where the CPU
// has them, else on float32 mode's sgemm over widened copies (float32 mode's
// bits, rounded once); in reproducible mode on the fixed-order float32
// kernel reading bfloat16 (that kernel's bits on float32 copies). All agree
// with the float32 contraction of the same values within bfloat16's
// rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/gemm_bfloat16.h"
#include "kernels/kernels.h"
#include "mtf/host_tensor.h"

namespace mtf {
namespace {

HostTensor random_bf16(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (float& x : v) x = u(rng);
  return HostTensor::from_floats(shape, v, bfloat16);
}

// Restores the float32 path's setting when a test ends.
struct ForcedFloat32 {
  explicit ForcedFloat32(bool forced) : saved(kernels::force_bfloat16_gemm_float32(forced)) {}
  ~ForcedFloat32() { kernels::force_bfloat16_gemm_float32(saved); }
  bool saved;
};

HostTensor contract(const HostTensor& a, const HostTensor& b, const Shape& out, DType dtype,
                    bool forced) {
  ForcedFloat32 force(forced);
  HostTensor r(out, dtype);
  kernels::einsum({&a, &b}, r, false);
  return r;
}

struct Case {
  const char* what;
  Shape a, b, out;
  // Fast mode on the forced path gives float32 mode's bits (sgemm on
  // widened copies); dots along a contiguous K run on vector lanes instead.
  bool fast_is_sgemm = true;
};

std::vector<Case> cases() {
  const Dimension b{"b", 3}, m{"m", 37}, k{"k", 70}, n{"n", 45}, l{"l", 19}, h{"h", 4}, d{"d", 16},
      mm{"mm", 23}, x{"x", 2};
  return {
      {"plain [b,m,k] x [k,n]", Shape({b, m, k}), Shape({k, n}), Shape({b, m, n})},
      {"A transposed [k,m] x [k,n]", Shape({k, m}), Shape({k, n}), Shape({m, n})},
      {"B transposed [m,k] x [n,k]", Shape({m, k}), Shape({n, k}), Shape({m, n})},
      {"attention logits [b,l,h,d] x [b,mm,h,d]", Shape({b, l, h, d}), Shape({b, mm, h, d}),
       Shape({b, h, l, mm})},
      {"attention values [b,h,l,mm] x [b,mm,h,d]", Shape({b, h, l, mm}), Shape({b, mm, h, d}),
       Shape({b, l, h, d})},
      {"three batch axes [x,b,l,h,d] x [b,mm,x,h,d] -> [h,x,b,l,mm]", Shape({x, b, l, h, d}),
       Shape({b, mm, x, h, d}), Shape({h, x, b, l, mm})},
      {"dot along contiguous K [b,l,k] x [b,l,k] -> [b,l]", Shape({b, l, k}), Shape({b, l, k}),
       Shape({b, l}), false},
      {"dot along strided K [b,l,d] x [b,l,d] -> [d]", Shape({b, l, d}), Shape({b, l, d}),
       Shape({d})},
      {"permuted [n,b,k] x [m,k,b] -> [m,b,n]", Shape({n, b, k}), Shape({m, k, b}),
       Shape({m, b, n})},
  };
}

// Each element against the float32 contraction of the same values: a
// bfloat16 result within one rounding (2^-8 relative) plus the float32
// summation differences.
void expect_close(const HostTensor& got, const HostTensor& want, int64_t k, const char* what) {
  const std::vector<float> g = got.to_floats(), w = want.to_floats();
  ASSERT_EQ(g.size(), w.size());
  const bool rounded = got.dtype() == bfloat16;
  for (size_t i = 0; i < g.size(); ++i) {
    const float tol = (rounded ? std::ldexp(std::fabs(w[i]), -8) : 0.f) + 1e-6f * k;
    ASSERT_NEAR(g[i], w[i], tol) << what << " element " << i;
  }
}

TEST(BFloat16Einsum, NativeAndFloat32PathsAgreeWithTheFloat32Contraction) {
  std::mt19937 rng(5);
  for (const Case& c : cases()) {
    const HostTensor a = random_bf16(c.a, rng), b = random_bf16(c.b, rng);
    const HostTensor a32 = a.as_dtype(float32), b32 = b.as_dtype(float32);
    HostTensor want(c.out, float32);
    kernels::einsum({&a32, &b32}, want, false);
    const int64_t k = a.num_elements() * b.num_elements() / c.out.num_elements();
    for (bool forced : {true, false}) {
      for (DType dt : {float32, bfloat16}) {
        const HostTensor got = contract(a, b, c.out, dt, forced);
        EXPECT_EQ(got.dtype(), dt);
        expect_close(got, want, k, c.what);
        if (forced && c.fast_is_sgemm) {  // float32 mode's sums, rounded once
          EXPECT_EQ(got.to_floats(), want.as_dtype(dt).to_floats()) << c.what;
        }
      }
    }
  }
  if (!kernels::bfloat16_gemm_native())
    GTEST_SKIP() << "the native path was not run: " << kernels::bfloat16_gemm_description();
}

TEST(BFloat16Einsum, FastDotsDependOnTheirOwnRowOnly) {
  // Dots along a contiguous K sum on vector lanes in fast mode: each output
  // must still get the same bits wherever its row sits (a slice of the batch
  // gives the whole's values), for K a multiple of the lanes or not.
  std::mt19937 rng(7);
  for (int64_t k : {1, 15, 16, 70, 512, 1000}) {
    const Dimension b{"b", 6}, kd{"k", k}, half{"b", 3};
    for (DType dt : {float32, bfloat16}) {
      const HostTensor a = random_bf16(Shape({b, kd}), rng).as_dtype(dt);
      const HostTensor c = random_bf16(Shape({b, kd}), rng).as_dtype(dt);
      HostTensor whole(Shape({b}), float32);
      kernels::einsum({&a, &c}, whole, false);
      const auto w = whole.to_floats();
      for (int64_t start : {0, 3}) {
        HostTensor a_part(Shape({half, kd}), dt), c_part(Shape({half, kd}), dt);
        const int64_t bytes = a_part.num_bytes();
        std::memcpy(a_part.raw_data(), static_cast<const char*>(a.raw_data()) + start / 3 * bytes,
                    bytes);
        std::memcpy(c_part.raw_data(), static_cast<const char*>(c.raw_data()) + start / 3 * bytes,
                    bytes);
        HostTensor part(Shape({half}), float32);
        kernels::einsum({&a_part, &c_part}, part, false);
        const auto got = part.to_floats();
        for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(got[i], w[start + i]) << "k " << k;
      }
      HostTensor want(Shape({b}), float32);
      const HostTensor a32 = a.as_dtype(float32), c32 = c.as_dtype(float32);
      kernels::einsum({&a32, &c32}, want, true);
      expect_close(whole, want, k, "fast dot");
    }
  }
}

TEST(BFloat16Einsum, ReproducibleModeGivesTheFixedOrderFloat32Bits) {
  // Products of two bfloat16 values are exact in float32: the fixed-order
  // float32 kernel on widened copies gives the same bits on every machine,
  // native instructions or not.
  std::mt19937 rng(6);
  for (const Case& c : cases()) {
    const HostTensor a = random_bf16(c.a, rng), b = random_bf16(c.b, rng);
    const HostTensor a32 = a.as_dtype(float32), b32 = b.as_dtype(float32);
    HostTensor want(c.out, float32);
    kernels::einsum({&a32, &b32}, want, true);
    for (bool forced : {true, false}) {
      ForcedFloat32 force(forced);
      HostTensor got(c.out, bfloat16);
      kernels::einsum({&a, &b}, got, true);
      EXPECT_EQ(got.to_floats(), want.as_dtype(bfloat16).to_floats()) << c.what;
    }
  }
}

}  // namespace
}  // namespace mtf
