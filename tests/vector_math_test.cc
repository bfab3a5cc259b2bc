// exp_lane / exp_array (src/kernels/vector_math.h): close to the correctly
// rounded exp, the documented edges, and the same bits for an element
// wherever it sits in an array (vector body or scalar tail).
#include "kernels/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mtf::kernels {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(VectorMathTest, ExpWithinTwoUlpOfCorrectlyRounded) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.5f; x += 0.00731f) {
    const double want = std::exp(static_cast<double>(x));
    const float got = exp_lane(x);
    const double ulp =
        std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    worst = std::max(worst, std::fabs(got - want) / ulp);
  }
  EXPECT_LE(worst, 2.0);
}

TEST(VectorMathTest, ExpEdges) {
  EXPECT_EQ(exp_lane(0.0f), 1.0f);
  EXPECT_EQ(exp_lane(-1e9f), 0.0f);   // attention masks
  EXPECT_EQ(exp_lane(-88.0f), 0.0f);  // below FLT_MIN: flushed
  EXPECT_EQ(exp_lane(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_lane(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_lane(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(exp_lane(std::numeric_limits<float>::quiet_NaN())));
  for (const float x : {88.7f, -87.3f}) {
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(exp_lane(x), want, want * 3e-7) << x;
  }
}

TEST(VectorMathTest, ExpArrayGivesEveryElementTheLaneBits) {
  std::vector<float> x(203), y(203);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -30.0f + 0.37f * static_cast<float>(i);
  for (size_t begin = 0; begin < 20; ++begin) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{16}, size_t{33}, x.size() - begin}) {
      exp_array(x.data() + begin, y.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(bits(y[i]), bits(exp_lane(x[begin + i]))) << begin << " " << n << " " << i;
    }
  }
  exp_array(x.data(), x.data(), 5);  // in place
  EXPECT_EQ(x[0], exp_lane(-30.0f));
}

}  // namespace
}  // namespace mtf::kernels
