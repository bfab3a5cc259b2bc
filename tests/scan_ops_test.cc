// cumsum and cumprod: against loops, their gradients against finite
// differences (cumprod's with zeros in x against the product rule), and the
// same bits under layouts that split the scanned dimension or others.
#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::eval;
using testing::random_tensor;

// Reference scan over the middle dimension of [a, n, b].
std::vector<float> ref_scan(const HostTensor& x, bool prod, bool exclusive, bool reverse) {
  const int64_t a = x.shape()[0].size, n = x.shape()[1].size, b = x.shape()[2].size;
  const std::vector<float> v = x.to_floats();
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t k = 0; k < b; ++k) {
      float acc = prod ? 1.f : 0.f;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const float xj = v[(i * n + j) * b + k];
        if (!exclusive) acc = prod ? acc * xj : acc + xj;
        out[(i * n + j) * b + k] = acc;
        if (exclusive) acc = prod ? acc * xj : acc + xj;
      }
    }
  return out;
}

TEST(ScanOpsTest, MatchLoopsForEveryVariant) {
  Graph g;
  Mesh mesh(g, "m");
  const Shape shape("a:2;n:7;b:3");
  const HostTensor xv = random_tensor(shape, 5, 0.5f, 1.5f);
  Tensor x = placeholder(mesh, shape, float32, "x");
  for (bool prod : {false, true})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(std::string(prod ? "cumprod" : "cumsum") + (exclusive ? " exclusive" : "") +
                     (reverse ? " reverse" : ""));
        Tensor y = prod ? cumprod(x, "n", exclusive, reverse) : cumsum(x, "n", exclusive, reverse);
        EXPECT_EQ(eval(y, {{x, xv}}), ref_scan(xv, prod, exclusive, reverse));
      }
  // By Dimension, and on int32.
  Tensor k = placeholder(mesh, Shape("n:4"), int32, "k");
  const HostTensor kv = HostTensor::from_ints(Shape("n:4"), {1, 2, 3, 4});
  EXPECT_EQ(eval(cast(cumsum(k, k.shape().get("n")), float32), {{k, kv}}),
            (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(eval(cast(cumprod(k, "n", true), float32), {{k, kv}}),
            (std::vector<float>{1, 1, 2, 6}));
}

TEST(ScanOpsTest, GradientsMatchFiniteDifferences) {
  const Shape shape("a:2;n:5;b:3");
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(std::string(exclusive ? "exclusive " : "") + (reverse ? "reverse" : ""));
      check_gradients({shape}, [&](const std::vector<Tensor>& x) {
        return cumsum(x[0], "n", exclusive, reverse);
      });
      check_gradients(
          {shape},
          [&](const std::vector<Tensor>& x) { return cumprod(x[0], "n", exclusive, reverse); },
          testing::uniform(0.5f, 1.5f));
    }
}

// With zeros in x (where dividing by x would fail), against the product
// rule written out: d/dx_i sum_j g_j prod_{k<=j} x_k.
TEST(ScanOpsTest, CumprodGradientWithZeros) {
  Graph g;
  Mesh mesh(g, "m");
  const std::vector<float> xs = {2.f, 0.f, 3.f, 0.f, 5.f};
  const std::vector<float> ws = {1.f, 2.f, 3.f, 4.f, 5.f};
  Tensor x = placeholder(mesh, Shape("n:5"), float32, "x");
  Tensor w = import_host(mesh, HostTensor::from_floats(Shape("n:5"), ws));
  Tensor loss = reduce_sum(cumprod(x, "n") * w);
  Tensor dx = gradients({loss}, {x})[0];
  const std::vector<float> got = eval(dx, {{x, HostTensor::from_floats(Shape("n:5"), xs)}});
  for (int i = 0; i < 5; ++i) {
    double want = 0;
    for (int j = i; j < 5; ++j) {
      double p = ws[j];
      for (int k = 0; k <= j; ++k)
        if (k != i) p *= xs[k];
      want += p;
    }
    EXPECT_DOUBLE_EQ(got[i], want) << i;
  }
}

TEST(ScanOpsTest, EveryLayoutGivesTheOneProcessorBits) {
  const Shape shape("a:4;n:8;b:6");
  const HostTensor xv = random_tensor(shape, 3, 0.5f, 1.5f);
  auto run = [&](const char* mesh_shape, const char* layout) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, shape, float32, "x");
    Tensor y = cumsum(x, "n") + cumprod(x, "n", true, true);
    Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    mc.reproducible = true;
    Session s(g, mc);
    return s.run({y, dx}, {{x, xv}});
  };
  const std::vector<HostTensor> one = run("", "");
  for (const auto& [m, l] : std::vector<std::pair<const char*, const char*>>{
           {"r:2", "n:r"}, {"r:4", "a:r"}, {"r:2;c:2", "n:r;b:c"}}) {
    SCOPED_TRACE(std::string(m) + " " + l);
    const std::vector<HostTensor> got = run(m, l);
    for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(got[i].to_floats(), one[i].to_floats());
  }
}

TEST(ScanOpsTest, BadArgumentsAreErrors) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("n:4"), float32, "x");
  EXPECT_THROW(cumsum(x, "m"), ShapeError);
  EXPECT_THROW(cumprod(Tensor(), "n"), ValueError);
}

}  // namespace
}  // namespace mtf
