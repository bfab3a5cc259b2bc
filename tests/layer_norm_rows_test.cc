// layer norm's bfloat16 normalization and its gradient as row kernels: the
// same bits as their compositions run op by op (fused or not, fast and
// fixed order, on layouts that split the normalized dimension and on those
// that do not), and the lowering's rows pass uses them only where the
// dimension is whole.
#include <cmath>
#include <cstring>
#include <random>

#include "lowering/program.h"
#include "lowering/row_kernels.h"
#include "mtf/gradients.h"
#include "mtf/layers.h"
#include "mtf/session.h"
#include "test_util.h"

namespace mtf {
namespace {

bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()) == 0;
}

int count_type(const Program& p, const std::string& type) {
  int n = 0;
  for (const Step& s : p.steps) n += step_op_type(s) == type;
  return n;
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
  const struct {
    const char* mesh;
    const char* layout;
  } cases[] = {{"", ""}, {"c:2", "d:c"}, {"c:2", "b:c"}};
  std::vector<HostTensor> fast, fixed;
  for (bool reproducible : {false, true}) {
    std::vector<HostTensor> one;  // the first run's
    for (const auto& c : cases) {
      if (!reproducible && *c.mesh) continue;  // fast mode: layouts agree to rounding only
      for (bool fuse : {true, false}) {
        SCOPED_TRACE(std::string(c.layout) + (fuse ? " fused" : "") +
                     (reproducible ? " reproducible" : ""));
        MeshConfig mc;
        mc.mesh_shape = MeshShape(c.mesh);
        mc.layout = LayoutRules(c.layout);
        mc.reproducible = reproducible;
        mc.fuse = fuse;
        Session s(lg.g, mc);
        const std::vector<HostTensor> got = s.run({lg.y, lg.dx}, {{lg.x, in}});
        if (one.empty()) one = got;
        EXPECT_TRUE(same_bits(got[0], one[0]));
        EXPECT_TRUE(same_bits(got[1], one[1]));
      }
    }
    (reproducible ? fixed : fast) = one;
  }
  EXPECT_FALSE(same_bits(fast[0], fixed[0]));
  EXPECT_FALSE(same_bits(fast[1], fixed[1]));
}

}  // namespace
}  // namespace mtf
