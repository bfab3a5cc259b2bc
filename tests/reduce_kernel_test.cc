// The reduction kernel's row path (a contiguous row into one value, many
// partial sums at once): right for every row length around its lane count,
// for sums, max and min, and repeatable.
#include <cmath>
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
// The unordered row path's definition, written out: 64 partial results
// (element i into lane i % 64 while whole blocks of 64 remain), combined in
// a halving tree, then the rest of the row one by one. Whichever code runs it
// (vector lanes or the compiler's loop) must give exactly these bits.
float row_by_definition(const float* x, int64_t n, float init, float (*op)(float, float)) {
  float acc[64];
  for (float& a : acc) a = init;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 64; ++k) acc[k] = op(acc[k], x[i + k]);
  for (int w = 32; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
  float r = acc[0];
  for (; i < n; ++i) r = op(r, x[i]);
  return r;
}

TEST(ReduceKernelTest, RowsGiveTheBitsOfTheirDefinition) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  float (*sum)(float, float) = [](float a, float b) { return a + b; };
  float (*max)(float, float) = [](float a, float b) { return b > a || b != b ? b : a; };
  float (*min)(float, float) = [](float a, float b) { return b < a || b != b ? b : a; };
  for (int64_t n : {1, 63, 64, 65, 128, 129, 1000}) {
    for (DType dt : {float32, bfloat16}) {
      SCOPED_TRACE(::testing::Message()
                   << "n " << n << (dt == bfloat16 ? " bfloat16" : " float32"));
      HostTensor x(Shape({{"r", 4}, {"c", n}}), float32);
      for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = u(rng) * 1000.f;
      if (n > 70) x.data<float>()[2 * n + 70] = NAN;  // row 2: NaN wins max and min
      x = x.as_dtype(dt);
      const HostTensor wide = x.as_dtype(float32);
      const struct {
        kernels::ReduceFn fn;
        float (*op)(float, float);
        float init;
      } fns[] = {{kernels::ReduceFn::kSum, sum, 0.f},
                 {kernels::ReduceFn::kMax, max, -INFINITY},
                 {kernels::ReduceFn::kMin, min, INFINITY}};
      for (const auto& f : fns) {
        HostTensor out(Shape({{"r", 4}}), float32);
        kernels::reduce(f.fn, x, out, false);
        for (int64_t r = 0; r < 4; ++r) {
          const float want =
              f.op(f.init, row_by_definition(wide.data<float>() + r * n, n, f.init, f.op));
          const float got = out.data<float>()[r];
          EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0)
              << "row " << r << ": " << got << " vs " << want;
        }
      }
    }
  }
}

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
