// Every differentiable op's gradient against central finite differences.
#include "test_util.h"

namespace mtf {
namespace {

using testing::away_from_zero;
using testing::check_gradients;
using testing::distinct;
using testing::uniform;
using V = std::vector<Tensor>;

const Shape kAB("a:3;b:4");

TEST(GradientTest, Unary) {
  using Fn = Tensor (*)(const Tensor&, const std::string&);
  struct Case {
    const char* name;
    Fn fn;
    testing::Generator gen;
  };
  const std::vector<Case> cases = {
      {"relu", relu, away_from_zero()},       {"gelu", gelu, uniform(-2, 2)},
      {"exp", exp, uniform(-1, 1)},           {"log", log, uniform(0.5f, 2)},
      {"tanh", tanh, uniform(-2, 2)},         {"sigmoid", sigmoid, uniform(-3, 3)},
      {"sqrt", sqrt, uniform(0.5f, 2)},       {"rsqrt", rsqrt, uniform(0.5f, 2)},
      {"square", square, uniform(-2, 2)},     {"abs", abs, away_from_zero()},
      {"negative", negative, uniform(-1, 1)}, {"reciprocal", reciprocal, away_from_zero()},
      {"sin", sin, uniform(-3, 3)},           {"cos", cos, uniform(-3, 3)},
      {"softplus", softplus, uniform(-3, 3)}, {"identity", identity, uniform(-1, 1)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    check_gradients(
        {kAB}, [&](const V& x) { return c.fn(x[0], ""); }, c.gen);
  }
  check_gradients({kAB}, [](const V& x) { return cast(x[0], float32); });
}

// Through bfloat16 and back the gradient is the upstream gradient rounded to
// bfloat16 (cast's gradient casts back), exactly.
TEST(GradientTest, CastThroughBFloat16) {
  Graph g;
  Mesh mesh(g, "mesh");
  Tensor x = placeholder(mesh, kAB, float32, "x");
  Tensor w = placeholder(mesh, kAB, float32, "w");
  Tensor y = cast(cast(x, bfloat16), float32);
  Tensor loss = reduce_sum(y * w);
  Tensor dx = gradients({loss}, {x})[0];
  std::vector<float> wv;
  for (int i = 0; i < 12; ++i) wv.push_back(1.0f + i / 7.0f);
  Session s(g);
  const HostTensor xh = HostTensor::from_floats(kAB, std::vector<float>(12, 0.5f));
  const HostTensor wh = HostTensor::from_floats(kAB, wv);
  EXPECT_EQ(s.run(dx, {{x, xh}, {w, wh}}).to_floats(), wh.as_dtype(bfloat16).to_floats());
}

TEST(GradientTest, BinaryWithBroadcasting) {
  const std::vector<Shape> shapes = {Shape("a:3;b:4"), Shape("c:2;a:3")};
  SCOPED_TRACE("case 0");
  check_gradients(shapes, [](const V& x) { return x[0] + x[1]; });
  SCOPED_TRACE("case 1");
  check_gradients(shapes, [](const V& x) { return x[0] - x[1]; });
  SCOPED_TRACE("case 2");
  check_gradients(shapes, [](const V& x) { return x[0] * x[1]; });
  SCOPED_TRACE("case 3");
  check_gradients(
      shapes, [](const V& x) { return x[0] / x[1]; }, away_from_zero());
  SCOPED_TRACE("case 4");
  check_gradients(
      shapes, [](const V& x) { return minimum(x[0], x[1]); }, distinct());
  SCOPED_TRACE("case 5");
  check_gradients(
      shapes, [](const V& x) { return maximum(x[0], x[1]); }, distinct());
  SCOPED_TRACE("case 6");
  check_gradients(
      shapes, [](const V& x) { return pow(x[0], x[1]); }, uniform(0.5f, 1.5f));
  SCOPED_TRACE("case 7");
  check_gradients({kAB, Shape()}, [](const V& x) { return x[0] * x[1]; });  // scalar
  SCOPED_TRACE("case 8");
  check_gradients({kAB}, [](const V& x) { return 3.f - x[0] * 2.f + 1.f / (x[0] + 3.f); });
  SCOPED_TRACE("case 9");
  check_gradients(
      {kAB, kAB}, [](const V& x) { return where(greater(x[0], x[1]), x[0] * 2.f, square(x[1])); },
      distinct());
  SCOPED_TRACE("case 10");
  check_gradients({Shape("a:3")}, [](const V& x) { return broadcast(x[0], Shape("b:2;a:3")); });
  SCOPED_TRACE("case 11");
  check_gradients({kAB}, [](const V& x) { return add_n({x[0], x[0] * x[0], x[0]}); });
}

TEST(GradientTest, Einsum) {
  check_gradients({Shape("i:3;k:4"), Shape("k:4;j:5")}, [](const V& x) {
    return einsum({x[0], x[1]}, Shape("i:3;j:5"));
  });
  check_gradients({Shape("b:2;i:3;k:4"), Shape("k:4;b:2;j:2")}, [](const V& x) {
    return einsum({x[0], x[1]}, Shape("j:2;b:2;i:3"));
  });
  check_gradients({Shape("i:3;k:4;e:2"), Shape("k:4;j:2"), Shape("j:2;l:3")}, [](const V& x) {
    return einsum({x[0], x[1], x[2]}, Shape("i:3;l:3"));
  });
  check_gradients({Shape("r:2;c:3;h:4"), Shape("b:3;r:2;c:3")}, [](const V& x) {
    return einsum({x[1], x[0]}, Shape("b:3;h:4"));
  });
  check_gradients({kAB}, [](const V& x) { return einsum({x[0]}, Shape("b:4")); });
}

TEST(GradientTest, Reductions) {
  const Shape s("a:3;b:4;c:2");
  check_gradients({s}, [](const V& x) { return reduce_sum(x[0], Shape("c:2;a:3")); });
  check_gradients({s}, [](const V& x) { return reduce_sum(x[0]); });
  check_gradients({s}, [](const V& x) { return reduce_mean(x[0], Dimension{"b", 4}); });
  check_gradients(
      {s}, [](const V& x) { return reduce_max(x[0], Shape("a:3")); }, distinct());
  check_gradients(
      {s},
      [](const V& x) {
        return reduce_min(x[0], Dimension{"c", 2});
      },
      distinct());
  check_gradients({s}, [](const V& x) { return reduce_logsumexp(x[0], Dimension{"b", 4}); });
  check_gradients({s}, [](const V& x) { return softmax(x[0], Dimension{"b", 4}); });
  check_gradients({s}, [](const V& x) { return log_softmax(x[0], Dimension{"a", 3}); });
  check_gradients(
      {s},
      [](const V& x) {
        return top_k(x[0], Dimension{"b", 4}, Dimension{"k", 2}).first;
      },
      distinct());
}

TEST(GradientTest, CrossEntropy) {
  const Dimension v{"v", 5};
  check_gradients(
      {Shape("b:3;v:5"), Shape("b:3;v:5")},
      [&](const V& x) {
        return softmax_cross_entropy_with_logits(x[0], softmax(x[1], v), v, 0.01f);
      },
      uniform(-2, 2));
}

TEST(GradientTest, LayoutOps) {
  const Shape s("a:3;b:4");
  check_gradients({s}, [](const V& x) { return reshape(x[0], Shape("x:2;y:6")); });
  check_gradients({s}, [](const V& x) { return rename_dimension(x[0], "a", "z"); });
  check_gradients({s}, [](const V& x) { return transpose(x[0], Shape("b:4;a:3")); });
  check_gradients({s}, [](const V& x) { return slice(x[0], 1, 2, "b"); });
  check_gradients({s}, [](const V& x) { return pad(x[0], 2, 1, "a"); });
  check_gradients({s, Shape("b:4;a:2")}, [](const V& x) { return concat({x[0], x[1]}, "a"); });
  check_gradients({s}, [](const V& x) {
    auto p = split(x[0], Dimension{"b", 4}, {1, 3});
    return p[0] * 2.f + reduce_sum(p[1], Shape("a:3"));
  });
  check_gradients({s, s}, [](const V& x) { return stack({x[0], x[1]}, "s", 0); });
  check_gradients({s}, [](const V& x) {
    auto u = unstack(x[0], Dimension{"a", 3});
    return u[0] * u[2];
  });
  check_gradients({s}, [](const V& x) { return shift(x[0], 1, Dimension{"b", 4}, false); });
  check_gradients({s}, [](const V& x) { return shift(x[0], -2, Dimension{"a", 3}, true); });
}

TEST(GradientTest, GatherDropoutStopGradient) {
  Graph g;
  Mesh mesh(g, "m");
  // gather: the indices are constants inside f.
  check_gradients({Shape("v:5;e:3")}, [](const V& x) {
    Tensor idx = import_host(x[0].mesh(), HostTensor::from_ints(Shape("b:4"), {4, 0, 4, 2}));
    return gather(x[0], idx, Dimension{"v", 5});
  });
  check_gradients({Shape("a:10;b:10")}, [](const V& x) { return dropout(x[0], 0.7f, 5); });
  check_gradients({kAB}, [](const V& x) { return x[0] + stop_gradient(x[0]) * 0.f; });
  // Directly: no gradient flows through stop_gradient.
  Tensor p = placeholder(mesh, kAB, float32, "p");
  Tensor gp = gradients({reduce_sum(stop_gradient(p) * p)}, {p})[0];
  Session s(g);
  HostTensor val = testing::random_tensor(kAB, 3);
  EXPECT_EQ(s.run(gp, {{p, val}}).to_floats(), val.to_floats());
}

TEST(GradientTest, UnrelatedInputGetsZerosAndIntInputsAreSkipped) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor a = placeholder(mesh, Shape("a:2"), float32, "a");
  Tensor b = placeholder(mesh, Shape("b:3"), float32, "b");
  auto grads = gradients({reduce_sum(a * 3.f)}, {a, b});
  Session s(g);
  auto r = s.run(grads, {{a, HostTensor::from_floats(Shape("a:2"), {1, 2})}});
  EXPECT_EQ(r[0].to_floats(), (std::vector<float>{3, 3}));
  EXPECT_EQ(r[1].to_floats(), (std::vector<float>{0, 0, 0}));
}

}  // namespace
}  // namespace mtf
