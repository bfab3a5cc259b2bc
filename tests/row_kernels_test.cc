// bfloat16 softmax and layer norm's normalization, and their gradients, as
// row kernels: each kernel has the bits of its composition's ops run one by
// one (fast and fixed order, on rows where the two differ), and the
// lowering's rows pass puts it in place of the composition only where the
// dimension is whole — sessions give the same bits with the kernels or
// without, on layouts that split the dimension and on those that do not.
#include "lowering/row_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/kernels.h"
#include "lowering/program.h"
#include "mtf/gradients.h"
#include "mtf/layers.h"
#include "mtf/session.h"
#include "test_util.h"

namespace mtf {
namespace {

using kernels::BinaryFn;
using kernels::ReduceFn;
using kernels::UnaryFn;
using testing::same_bits;

int count_type(const Program& p, const std::string& type) {
  int n = 0;
  for (const Step& s : p.steps) n += step_op_type(s) == type;
  return n;
}

// Runs `fetches` on one core in fast mode, then in reproducible mode on one
// core and on two with `dim` split and with "b" split, each fused (the row
// kernels) and not: within each mode every run has the first's bits.
// Returns the fast and the reproducible results.
std::pair<std::vector<HostTensor>, std::vector<HostTensor>> same_bits_with_kernels_or_without(
    Graph& g, const std::vector<Tensor>& fetches, const Feeds& feeds, const std::string& dim) {
  const std::string cases[][2] = {{"", ""}, {"c:2", dim + ":c"}, {"c:2", "b:c"}};
  std::vector<HostTensor> fast, fixed;
  for (bool reproducible : {false, true}) {
    std::vector<HostTensor>& one = reproducible ? fixed : fast;  // the first run's
    for (const auto& c : cases) {
      if (!reproducible && !c[0].empty()) continue;  // fast mode: layouts agree to rounding only
      for (bool fuse : {true, false}) {
        SCOPED_TRACE(c[1] + (fuse ? " fused" : "") + (reproducible ? " reproducible" : ""));
        MeshConfig mc;
        mc.mesh_shape = MeshShape(c[0]);
        mc.layout = LayoutRules(c[1]);
        mc.reproducible = reproducible;
        mc.fuse = fuse;
        Session s(g, mc);
        const std::vector<HostTensor> got = s.run(fetches, feeds);
        if (one.empty()) one = got;
        for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], one[i])) << i;
      }
    }
  }
  return {fast, fixed};
}

// Rows of logits in [-8, 8]; one masked like a causal bias (-1e9 in its
// second half), one constant, one holding a NaN, and one whose first value
// dominates the rest by ln(2^24), so that its float32 sum rounds, and
// differently in fast and fixed order.
HostTensor logits(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  HostTensor t(shape, float32);
  const int64_t n = shape[shape.ndims() - 1].size;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = u(rng);
  for (int64_t i = n / 2; i < n; ++i) p[n + i] = -1e9f;
  for (int64_t i = 0; i < n; ++i) p[2 * n + i] = 0.75f;
  p[3 * n + n / 3] = std::nanf("");
  for (int64_t i = 0; i < n; ++i) p[4 * n + i] = i == 0 ? 8.f : 8.f - 16.6355f;
  return t.as_dtype(bfloat16);
}

// softmax's bfloat16 composition (ops/reduce_ops.cc), op by op.
HostTensor composition(const HostTensor& x, bool fixed_order) {
  const Shape rows("r:" + std::to_string(x.shape()[0].size));
  HostTensor m(rows, bfloat16), d(x.shape(), float32), e(x.shape(), float32), s(rows, float32),
      inv(rows, float32), y(x.shape(), float32);
  kernels::reduce(ReduceFn::kMax, x, m);
  kernels::binary(BinaryFn::kSub, x.as_dtype(float32), m.as_dtype(float32), d);
  kernels::unary(UnaryFn::kExp, d.as_dtype(bfloat16).as_dtype(float32), e);
  e = e.as_dtype(bfloat16).as_dtype(float32);
  kernels::reduce(ReduceFn::kSum, e, s, fixed_order);
  kernels::unary(UnaryFn::kReciprocal, s, inv);
  kernels::binary(BinaryFn::kMul, e, inv.as_dtype(bfloat16).as_dtype(float32), y);
  return y.as_dtype(bfloat16);
}

// Rows [0, a, b, then 129 values c whose exponentials are too small to
// change a running sum near 1], over a grid of a and b, as `shape` (its
// innermost dimension 132): summed in order (fixed) the c terms vanish, on
// lanes (fast) they add up first and count, and on some rows a bfloat16
// rounding boundary of 1 / sum lies between the two sums — so the two orders
// give different results there (rare in bfloat16 otherwise: 1 / sum is
// rounded to 8 bits).
HostTensor order_sensitive_rows(const Shape& shape) {
  const int64_t n = 132, rows = shape.num_elements() / n;
  HostTensor t(shape, float32);
  float* p = t.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = p + r * n;
    row[0] = 0.f;
    row[1] = -8.f + 0.03125f * static_cast<float>((r / 64) % 96);
    row[2] = -14.f + 0.0625f * static_cast<float>(r % 64);
    std::fill(row + 3, row + n, -17.5f);
  }
  return t.as_dtype(bfloat16);
}

TEST(SoftmaxRowsTest, KernelSumsInTheOrderAsked) {
  const HostTensor x = order_sensitive_rows(Shape({{"r", 96 * 64}, {"m", 132}}));
  const HostTensor fast = composition(x, false), fixed = composition(x, true);
  EXPECT_FALSE(same_bits(fast, fixed));
  HostTensor got(x.shape(), bfloat16);
  kernels::softmax_rows_bfloat16(x, got, false);
  EXPECT_TRUE(same_bits(got, fast));
  kernels::softmax_rows_bfloat16(x, got, true);
  EXPECT_TRUE(same_bits(got, fixed));
}

// softmax's gradient composition (ops/reduce_ops.cc), op by op.
HostTensor gradient_composition(const HostTensor& dy, const HostTensor& y, bool fixed_order) {
  const Shape rows("r:" + std::to_string(y.shape()[0].size));
  HostTensor t(y.shape(), float32), s(rows, float32), u(y.shape(), float32), dx(y.shape(), float32);
  kernels::binary(BinaryFn::kMul, dy.as_dtype(float32), y.as_dtype(float32), t);
  t = t.as_dtype(bfloat16).as_dtype(float32);
  kernels::reduce(ReduceFn::kSum, t, s, fixed_order);
  kernels::binary(BinaryFn::kSub, dy.as_dtype(float32), s.as_dtype(bfloat16).as_dtype(float32), u);
  kernels::binary(BinaryFn::kMul, y.as_dtype(float32), u.as_dtype(bfloat16).as_dtype(float32), dx);
  return dx.as_dtype(bfloat16);
}

// The gradient's kernel: random rows (NaN, masked and constant ones among
// them), and rows whose sum of dy * y is [1, a, b, then 509 terms too small
// to change a running sum near 1] over a grid of a and b, on some of which
// fast and fixed order give different results.
TEST(SoftmaxRowsTest, GradientKernelHasTheCompositionsBits) {
  std::mt19937 rng(23);
  for (int64_t n : {4, 7, 128, 300}) {
    const Shape shape({{"r", 37}, {"m", n}});
    HostTensor y(shape, bfloat16);
    kernels::softmax_rows_bfloat16(logits(shape, rng), y, false);
    const HostTensor dy = testing::random_tensor(shape, 7, -1.f, 1.f).as_dtype(bfloat16);
    for (bool fixed_order : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + (fixed_order ? " fixed order" : ""));
      HostTensor got(shape, bfloat16);
      kernels::softmax_gradient_rows_bfloat16(dy, y, got, fixed_order);
      EXPECT_TRUE(same_bits(got, gradient_composition(dy, y, fixed_order)));
    }
  }
  const int64_t n = 512, rows = 64 * 64;
  const Shape shape({{"r", rows}, {"m", n}});
  HostTensor dyf(shape, float32), yf(shape, float32);
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dyf.data<float>() + r * n;
    float* w = yf.data<float>() + r * n;
    d[0] = w[0] = w[1] = w[2] = 1.f;
    d[1] = 0.00390625f * (0.5f + static_cast<float>(r / 64) / 64.f);     // a
    d[2] = 0.000244140625f * (1.f + static_cast<float>(r % 64) / 64.f);  // b
    std::fill(d + 3, d + n, 1.f);
    std::fill(w + 3, w + n, 3e-8f);
  }
  const HostTensor dy = dyf.as_dtype(bfloat16), y = yf.as_dtype(bfloat16);
  const HostTensor fast = gradient_composition(dy, y, false),
                   fixed = gradient_composition(dy, y, true);
  EXPECT_FALSE(same_bits(fast, fixed));
  HostTensor got(shape, bfloat16);
  kernels::softmax_gradient_rows_bfloat16(dy, y, got, false);
  EXPECT_TRUE(same_bits(got, fast));
  kernels::softmax_gradient_rows_bfloat16(dy, y, got, true);
  EXPECT_TRUE(same_bits(got, fixed));
}

TEST(SoftmaxRowsTest, KernelHasTheCompositionsBits) {
  std::mt19937 rng(17);
  for (int64_t n : {4, 7, 64, 128, 300}) {
    for (bool fixed_order : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + (fixed_order ? " fixed order" : ""));
      const HostTensor x = logits(Shape({{"r", 37}, {"m", n}}), rng);
      HostTensor got(x.shape(), bfloat16);
      kernels::softmax_rows_bfloat16(x, got, fixed_order);
      EXPECT_TRUE(same_bits(got, composition(x, fixed_order)));
    }
  }
}

TEST(SoftmaxRowsTest, RunsInPlaceOfTheCompositionOnlyWhereTheDimensionIsWhole) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor x = placeholder(mesh, Shape("b:4;h:3;m:40"), bfloat16, "x");
  const Tensor y = softmax(x, "m");
  const Tensor over_h = softmax(x, "h");  // not innermost: stays a composition

  const Tensor w = placeholder(mesh, x.shape(), bfloat16, "w");
  const Tensor dx =
      gradients({reduce_sum(cast(y * w, float32), Shape(std::vector<Dimension>{}))}, {x})[0];

  Program whole = lower(g, {y, over_h, dx}, {}, MeshShape("c:2"), LayoutRules("b:c"));
  EXPECT_EQ(fuse_row_kernels(whole), 2);
  EXPECT_EQ(count_type(whole, "softmax"), 1);
  EXPECT_EQ(count_type(whole, "softmax_grad"), 1);
  EXPECT_EQ(count_type(whole, "reduce_max"), 1);  // over_h's
  EXPECT_EQ(count_type(whole, "reduce_sum"), 1);  // over_h's

  Program split = lower(g, {y, dx}, {}, MeshShape("c:2"), LayoutRules("m:c"));
  EXPECT_EQ(fuse_row_kernels(split), 0);
  EXPECT_EQ(count_type(split, "softmax"), 0);
  EXPECT_EQ(count_type(split, "softmax_grad"), 0);
  EXPECT_GE(count_type(split, "allreduce"), 3);  // the row maxima and the two sums
}

// The same bits fused or not, on one core and with the softmax dimension
// split (reproducible mode), through the gradient too; on rows where fast
// and fixed order differ, so that the op must pass the run's mode on.
TEST(SoftmaxRowsTest, SessionsGiveTheSameBitsWithTheKernelOrWithout) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor x = placeholder(mesh, Shape("b:96;h:64;m:132"), bfloat16, "x");
  const Tensor y = softmax(x, "m");
  const Tensor w = import_host(mesh, testing::random_tensor(x.shape(), 5, 0.5f, 1.5f));
  const Tensor loss = reduce_sum(cast(y, float32) * w, Shape(std::vector<Dimension>{}));
  const Tensor dx = gradients({loss}, {x})[0];
  const HostTensor in = order_sensitive_rows(x.shape());
  const auto [fast, fixed] = same_bits_with_kernels_or_without(g, {y, dx}, {{x, in}}, "m");
  EXPECT_FALSE(same_bits(fast[0], fixed[0]));
}

// y = layer_norm(x) over d, and dx for the loss sum(y * w) (so that the
// normalization's gradient is w: the scale starts at 1); w random unless
// given.
struct LayerNormGraph {
  Graph g;
  Mesh mesh{g, "m"};
  Tensor x, y, dx;
  explicit LayerNormGraph(const Shape& shape, const HostTensor* weights = nullptr) {
    x = placeholder(mesh, shape, bfloat16, "x");
    y = layers::layer_norm(x, "d", "ln");
    const Tensor w =
        import_host(mesh, weights ? *weights : testing::random_tensor(shape, 5, -1.f, 1.f));
    dx = gradients({reduce_sum(cast(y, float32) * w, Shape(std::vector<Dimension>{}))}, {x})[0];
  }
};

TEST(LayerNormRowsTest, RunInPlaceOfTheCompositionsOnlyWhereTheDimensionIsWhole) {
  LayerNormGraph lg(Shape("b:4;l:3;d:40"));
  Program whole = lower(lg.g, {lg.y, lg.dx}, {}, MeshShape("c:2"), LayoutRules("b:c"));
  EXPECT_EQ(fuse_row_kernels(whole), 2);
  EXPECT_EQ(count_type(whole, "layer_norm"), 1);
  EXPECT_EQ(count_type(whole, "layer_norm_grad"), 1);
  EXPECT_EQ(count_type(whole, "rsqrt"), 0);

  Program split = lower(lg.g, {lg.y, lg.dx}, {}, MeshShape("c:2"), LayoutRules("d:c"));
  EXPECT_EQ(fuse_row_kernels(split), 0);
  EXPECT_EQ(count_type(split, "layer_norm"), 0);
  EXPECT_GE(count_type(split, "allreduce"), 4);  // two moments, two gradient means
}

// Rows of values of widely different sizes (sign * 2^k * (1 + f), k in
// [-14, 14]), so that float32 sums round; and a row [1, 2^-8 (1 - 2^-7),
// 2^-16, then 2^-24 each]: summed in order the 2^-24 terms vanish (ties to
// even beside 1) and the mean stays below a bfloat16 rounding boundary, on
// lanes they add up first and carry it over — so fast and fixed order give
// different results (the test fails if the kernels sum one way for both).
HostTensor wide_rows(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-14, 14);
  std::uniform_real_distribution<float> f(0.f, 1.f);
  HostTensor t(shape, float32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i)
    p[i] = (f(rng) < 0.5f ? -1.f : 1.f) * std::ldexp(1.f + f(rng), k(rng));
  const int64_t n = shape[shape.ndims() - 1].size;
  for (int64_t i = 0; i < n; ++i) p[i] = std::ldexp(1.f, -24);
  p[0] = 1.f;
  p[1] = std::ldexp(1.f - std::ldexp(1.f, -7), -8);
  p[2] = std::ldexp(1.f, -16);
  return t.as_dtype(bfloat16);
}

TEST(LayerNormRowsTest, SessionsGiveTheSameBitsWithTheKernelsOrWithout) {
  // The weights hold the same kind of rows: the gradient's means (of dz
  // and dz * z) differ by order too.
  const Shape shape("b:16;l:16;d:512");
  const HostTensor weights = wide_rows(shape, 43).as_dtype(float32);
  LayerNormGraph lg(shape, &weights);
  const HostTensor in = wide_rows(shape, 41);
  const auto [fast, fixed] =
      same_bits_with_kernels_or_without(lg.g, {lg.y, lg.dx}, {{lg.x, in}}, "d");
  EXPECT_FALSE(same_bits(fast[0], fixed[0]));
  EXPECT_FALSE(same_bits(fast[1], fixed[1]));
}

}  // namespace
}  // namespace mtf
