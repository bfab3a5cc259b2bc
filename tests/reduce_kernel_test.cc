// The reduction kernel's row path (a contiguous row into one value, many
// partial sums at once): right for every row length around its lane count,
// for sums, max and min, and repeatable.
#include <cstring>
#include <random>

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

}  // namespace
}  // namespace mtf
