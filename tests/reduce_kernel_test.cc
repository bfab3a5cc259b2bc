// The reduction kernel's row path (a contiguous row into one value, many
// partial sums at once): right for every row length around its lane count,
// for sums, max and min, and repeatable.
#include <cstring>
#include <random>

#include "kernels/blas_threads.h"
#include "kernels/kernels.h"
#include "test_util.h"

namespace mtf {
namespace {

TEST(ReduceKernelTest, RowsOfEveryLengthAroundTheLaneCount) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t n : {1, 7, 8, 31, 63, 64, 65, 127, 128, 129, 200, 1000}) {
    SCOPED_TRACE(n);
    const Shape shape({{"r", 3}, {"c", n}});
    HostTensor x(shape, float32);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = u(rng);
    for (bool fixed : {false, true}) {
      HostTensor sum(Shape({{"r", 3}}), float32), mx(Shape({{"r", 3}}), float32),
          mn(Shape({{"r", 3}}), float32), again(Shape({{"r", 3}}), float32);
      kernels::reduce(kernels::ReduceFn::kSum, x, sum, fixed);
      kernels::reduce(kernels::ReduceFn::kSum, x, again, fixed);
      kernels::reduce(kernels::ReduceFn::kMax, x, mx, fixed);
      kernels::reduce(kernels::ReduceFn::kMin, x, mn, fixed);
      EXPECT_EQ(std::memcmp(sum.raw_data(), again.raw_data(), sum.num_bytes()), 0);
      for (int64_t r = 0; r < 3; ++r) {
        double want = 0;
        float want_max = -1e30f, want_min = 1e30f;
        for (int64_t c = 0; c < n; ++c) {
          const float v = x.data<float>()[r * n + c];
          want += v;
          want_max = std::max(want_max, v);
          want_min = std::min(want_min, v);
        }
        EXPECT_NEAR(sum.data<float>()[r], want, 1e-5 * n);
        EXPECT_EQ(mx.data<float>()[r], want_max);
        EXPECT_EQ(mn.data<float>()[r], want_min);
        if (fixed) {  // fixed order: one element at a time, in index order
          float seq = 0.f;
          for (int64_t c = 0; c < n; ++c) seq += x.data<float>()[r * n + c];
          EXPECT_EQ(sum.data<float>()[r], seq);
        }
      }
    }
  }
}

// On OpenMP threads (kernel_threads() > 1) the kernel cuts a kept axis into
// parts: every output keeps the one-thread bits, for float32 and bfloat16
// input, whichever axes are kept (outer, inner, both, none).
TEST(ReduceKernelTest, ThreadsGiveTheOneThreadBits) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const Shape x_shape({{"a", 6}, {"b", 130}, {"c", 97}});
  std::vector<float> values(static_cast<size_t>(x_shape.num_elements()));
  for (float& v : values) v = u(rng);
  for (DType dtype : {float32, bfloat16}) {
    const HostTensor x = HostTensor::from_floats(x_shape, values, dtype);
    for (const char* kept : {"a:6", "c:97", "a:6;c:97", "b:130;a:6", ""}) {
      for (auto fn : {kernels::ReduceFn::kSum, kernels::ReduceFn::kMax}) {
        for (bool fixed : {false, true}) {
          SCOPED_TRACE(std::string(kept) + (dtype == bfloat16 ? " bfloat16" : " float32"));
          HostTensor one(Shape(kept), dtype), two(Shape(kept), dtype);
          {
            kernels::KernelThreadsScope threads(1);
            kernels::reduce(fn, x, one, fixed);
          }
          {
            kernels::KernelThreadsScope threads(2);
            EXPECT_EQ(kernels::kernel_threads(), 2);
            kernels::reduce(fn, x, two, fixed);
          }
          EXPECT_EQ(std::memcmp(one.raw_data(), two.raw_data(), one.num_bytes()), 0);
        }
      }
    }
  }
  EXPECT_EQ(kernels::kernel_threads(), 1);  // the scopes restored it
}

}  // namespace
}  // namespace mtf
