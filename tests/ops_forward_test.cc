// Forward values of every op against plain-loop references written here.
#include <algorithm>
#include <cmath>
#include <limits>

#include "test_util.h"

namespace mtf {
namespace {

using testing::eval;
using testing::expect_near_vectors;
using testing::for_each_index;
using testing::Index;
using testing::offset_of;
using testing::random_tensor;
using testing::ref_einsum;

class OpsTest : public ::testing::Test {
 protected:
  Graph g;
  Mesh mesh{g, "mesh"};
  Tensor in(const HostTensor& h) { return import_host(mesh, h); }
};

TEST_F(OpsTest, CreationOps) {
  expect_near_vectors(eval(constant(mesh, 2.5f, Shape("a:3"))), {2.5f, 2.5f, 2.5f});
  expect_near_vectors(eval(zeros(mesh, Shape("a:2;b:1"))), {0, 0});
  EXPECT_EQ(eval(ones(mesh, Shape("a:2"), int32)), (std::vector<float>{1, 1}));
  HostTensor h = random_tensor(Shape("a:2;b:3"), 1);
  EXPECT_EQ(eval(in(h)), h.to_floats());
  Tensor p = placeholder(mesh, Shape("a:2"), float32, "p");
  EXPECT_EQ(eval(p * 2.f, {{p, HostTensor::from_floats(Shape("a:2"), {1, 2})}}),
            (std::vector<float>{2, 4}));
  expect_near_vectors(eval(constant(mesh, 3.f)), {3.f});  // scalar
}

TEST_F(OpsTest, UnaryOps) {
  HostTensor h = random_tensor(Shape("a:3;b:5"), 2, 0.1f, 2.f);
  HostTensor hs = random_tensor(Shape("a:3;b:5"), 3, -2.f, 2.f);
  const auto v = h.to_floats(), s = hs.to_floats();
  auto check = [&](Tensor (*op)(const Tensor&, const std::string&), const HostTensor& x,
                   float (*ref)(float)) {
    std::vector<float> want;
    for (float e : x.to_floats()) want.push_back(ref(e));
    expect_near_vectors(eval(op(in(x), "")), want, 1e-5f);
  };
  check(relu, hs, [](float x) { return x > 0 ? x : 0.f; });
  check(gelu, hs, [](float x) {
    return 0.5f * x * (1 + std::tanh(std::sqrt(2 / 3.14159265f) * (x + 0.044715f * x * x * x)));
  });
  check(exp, hs, [](float x) { return std::exp(x); });
  check(log, h, [](float x) { return std::log(x); });
  check(tanh, hs, [](float x) { return std::tanh(x); });
  check(sigmoid, hs, [](float x) { return 1 / (1 + std::exp(-x)); });
  check(sqrt, h, [](float x) { return std::sqrt(x); });
  check(rsqrt, h, [](float x) { return 1 / std::sqrt(x); });
  check(square, hs, [](float x) { return x * x; });
  check(abs, hs, [](float x) { return std::fabs(x); });
  check(negative, hs, [](float x) { return -x; });
  check(reciprocal, h, [](float x) { return 1 / x; });
  check(sin, hs, [](float x) { return std::sin(x); });
  check(cos, hs, [](float x) { return std::cos(x); });
  check(softplus, hs, [](float x) { return std::log(1 + std::exp(x)); });
  check(sign, hs, [](float x) { return x > 0 ? 1.f : (x < 0 ? -1.f : 0.f); });
  // Extreme inputs stay finite where the function is.
  HostTensor big = HostTensor::from_floats(Shape("a:2"), {-100.f, 100.f});
  expect_near_vectors(eval(sigmoid(in(big))), {0.f, 1.f});
  expect_near_vectors(eval(softplus(in(big))), {0.f, 100.f});
}

TEST_F(OpsTest, CastTruncatesTowardZero) {
  HostTensor h = HostTensor::from_floats(Shape("a:4"), {-1.7f, -0.2f, 0.9f, 2.5f});
  Tensor c = cast(in(h), int32);
  EXPECT_EQ(c.dtype(), int32);
  EXPECT_EQ(eval(c), (std::vector<float>{-1, 0, 0, 2}));
  EXPECT_EQ(eval(cast(c, float32) + 0.5f), (std::vector<float>{-0.5f, 0.5f, 0.5f, 2.5f}));
}

// float32 -> bfloat16 rounds to nearest even (1 + 2^-8 is a tie: to 1;
// 1 + 3 * 2^-8 to 1 + 2^-6), bfloat16 -> float32 is exact, and a bfloat16
// placeholder is fed and fetched, on one processor and split over a mesh.
TEST_F(OpsTest, CastToBFloat16RoundsToNearestEven) {
  const std::vector<float> v = {1.f, 1.00390625f, 1.01171875f, -3.14159f, 1e-40f, 65504.f};
  // 1e-40 is a float32 subnormal; bfloat16 keeps it (not flushed), as 2^-133.
  const std::vector<float> want = {1.f, 1.f, 1.015625f, -3.140625f, std::ldexp(1.f, -133), 65536.f};
  HostTensor h = HostTensor::from_floats(Shape("a:6"), v);
  Tensor b = cast(in(h), bfloat16);
  EXPECT_EQ(b.dtype(), bfloat16);
  EXPECT_EQ(eval(b), want);
  EXPECT_EQ(eval(cast(b, float32)), want);
  EXPECT_EQ(eval(cast(cast(b, int32), bfloat16)), (std::vector<float>{1, 1, 1, -3, 0, 65536}));
  Tensor p = placeholder(mesh, Shape("a:6"), bfloat16, "p");
  Tensor doubled = cast(cast(p, float32) * 2.f, bfloat16);
  MeshConfig split;
  split.mesh_shape = MeshShape("x:2");
  split.layout = LayoutRules("a:x");
  for (const MeshConfig& config : {MeshConfig(), split}) {
    Session session(g, config);
    const HostTensor out =
        session.run({doubled}, {{p, HostTensor::from_floats(Shape("a:6"), v, bfloat16)}})[0];
    EXPECT_EQ(out.dtype(), bfloat16);
    std::vector<float> twice;
    for (float w : want) twice.push_back(2 * w);
    EXPECT_EQ(out.to_floats(), twice) << config.mesh_shape.to_string();
  }
}

// Reference for a binary op broadcast by name.
std::vector<float> ref_binary(const HostTensor& a, const HostTensor& b, const Shape& out,
                              float (*f)(float, float)) {
  std::vector<float> r(out.num_elements());
  const auto av = a.to_floats(), bv = b.to_floats();
  for_each_index(out, [&](const Index& i, int64_t flat) {
    r[flat] = f(av[offset_of(a.shape(), i)], bv[offset_of(b.shape(), i)]);
  });
  return r;
}

TEST_F(OpsTest, BinaryOpsBroadcastByName) {
  HostTensor a = random_tensor(Shape("x:3;y:4"), 4, 0.5f, 2.f);
  HostTensor b = random_tensor(Shape("z:2;x:3"), 5, 0.5f, 2.f);
  Tensor ta = in(a), tb = in(b);
  const Shape out("x:3;y:4;z:2");
  Tensor sum = ta + tb;
  EXPECT_EQ(sum.shape(), out);
  expect_near_vectors(eval(sum), ref_binary(a, b, out, [](float x, float y) { return x + y; }));
  expect_near_vectors(eval(ta - tb), ref_binary(a, b, out, [](float x, float y) { return x - y; }));
  expect_near_vectors(eval(ta * tb), ref_binary(a, b, out, [](float x, float y) { return x * y; }));
  expect_near_vectors(eval(ta / tb), ref_binary(a, b, out, [](float x, float y) { return x / y; }));
  expect_near_vectors(eval(minimum(ta, tb)),
                      ref_binary(a, b, out, [](float x, float y) { return std::min(x, y); }));
  expect_near_vectors(eval(maximum(ta, tb)),
                      ref_binary(a, b, out, [](float x, float y) { return std::max(x, y); }));
  expect_near_vectors(eval(pow(ta, tb)),
                      ref_binary(a, b, out, [](float x, float y) { return std::pow(x, y); }));
  expect_near_vectors(eval(less(ta, tb)),
                      ref_binary(a, b, out, [](float x, float y) { return float(x < y); }));
  expect_near_vectors(eval(greater_equal(ta, tb)),
                      ref_binary(a, b, out, [](float x, float y) { return float(x >= y); }));
  // One operand's dimensions contain the other's: the larger shape wins.
  HostTensor c = random_tensor(Shape("y:4;x:3"), 6);
  EXPECT_EQ((in(c) + ta).shape(), Shape("y:4;x:3"));
  expect_near_vectors(eval(in(c) + ta),
                      ref_binary(c, a, Shape("y:4;x:3"), [](float x, float y) { return x + y; }));
  // Given output shape, transposed.
  Shape o("z:2;y:4;x:3");
  expect_near_vectors(eval(add(ta, tb, &o)),
                      ref_binary(a, b, o, [](float x, float y) { return x + y; }));
  // Size-1 dimensions and scalars.
  HostTensor one = random_tensor(Shape("x:3;k:1"), 7);
  expect_near_vectors(eval(in(one)*2.f), ref_binary(one, HostTensor::scalar(2.f), one.shape(),
                                                    [](float x, float y) { return x * y; }));
}

TEST_F(OpsTest, ComparisonsAndWhere) {
  HostTensor a = HostTensor::from_floats(Shape("x:4"), {1, 2, 3, 4});
  HostTensor b = HostTensor::from_floats(Shape("x:4"), {4, 2, 1, 5});
  Tensor ta = in(a), tb = in(b);
  EXPECT_EQ(less(ta, tb).dtype(), bool_);
  EXPECT_EQ(eval(less(ta, tb)), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(eval(less_equal(ta, tb)), (std::vector<float>{1, 1, 0, 1}));
  EXPECT_EQ(eval(greater(ta, tb)), (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(eval(equal(ta, tb)), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(eval(not_equal(ta, tb)), (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ(eval(where(less(ta, tb), ta, tb)), (std::vector<float>{1, 2, 1, 4}));
  // where broadcasts: a scalar alternative.
  EXPECT_EQ(eval(where(greater(ta, tb), ta, constant(mesh, -1.f))),
            (std::vector<float>{-1, -1, 3, -1}));
}

TEST_F(OpsTest, WhereBroadcastsEveryOperandAlongAnyAxis) {
  // out[b, m, k] = cond[m] ? x[b, m, k] : y[k, b] (y transposed), with cond
  // constant along each row of k, then varying along the row (cond[k]), and
  // as float32 (nonzero is true); NaN passes through as it is.
  const Shape xs("b:2;m:3;k:4");
  HostTensor x = random_tensor(xs, 3);
  x.data<float>()[5] = std::nanf("");
  const HostTensor y = random_tensor(Shape("k:4;b:2"), 4);
  const HostTensor rows = HostTensor::from_ints(Shape("m:3"), {1, 0, 1});
  const HostTensor cols = HostTensor::from_floats(Shape("k:4"), {0.f, 2.f, 0.f, -1.f});
  for (const HostTensor& cond : {rows, cols}) {
    const std::vector<float> got = eval(where(in(cond), in(x), in(y)));
    ASSERT_EQ(got.size(), 24u);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t m = 0; m < 3; ++m)
        for (int64_t k = 0; k < 4; ++k) {
          const bool c = cond.shape()[0].name == "m" ? cond.data<int32_t>()[m] != 0
                                                     : cond.data<float>()[k] != 0.f;
          const float want = c ? x.data<float>()[(b * 3 + m) * 4 + k] : y.data<float>()[k * 2 + b];
          const float g = got[(b * 3 + m) * 4 + k];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(g));
          } else {
            EXPECT_EQ(g, want) << "b " << b << " m " << m << " k " << k;
          }
        }
  }
}

TEST_F(OpsTest, EinsumMatchesBruteForce) {
  struct Case {
    std::vector<const char*> inputs;
    const char* out;
  };
  const std::vector<Case> cases = {
      {{"i:3;k:4", "k:4;j:5"}, "i:3;j:5"},              // matmul
      {{"i:3;k:4", "k:4;j:5"}, "j:5;i:3"},              // transposed output
      {{"k:4;i:3", "j:5;k:4"}, "i:3;j:5"},              // transposed operands
      {{"b:2;i:3;k:4", "b:2;k:4;j:5"}, "b:2;i:3;j:5"},  // batched
      {{"i:3;b:2;k:4", "k:4;j:5;b:2"}, "j:5;b:2;i:3"},  // batched, scrambled
      {{"r:2;c:3;h:4", "b:5;r:2;c:3"}, "b:5;h:4"},      // two contracted dims
      {{"i:3;k:4;e:2", "k:4;j:5"}, "i:3;j:5"},          // dim only in one input
      {{"i:3;k:4", "k:4;j:5", "j:5;l:2"}, "i:3;l:2"},   // three inputs
      {{"i:3;j:4"}, "j:4"},                             // single input reduction
      {{"i:3;j:4"}, "j:4;i:3"},                         // single input transpose
      {{"i:3;j:4", "i:3;j:4"}, "i:3;j:4"},              // elementwise product
      {{"i:3;j:4", "j:4"}, ""},                         // full contraction
      {{"i:1;k:4", "k:4;j:1"}, "i:1;j:1"},              // size-1 dims
      {{"i:3;k:0", "k:0;j:2"}, "i:3;j:2"},              // empty contraction: zeros
      {{"i:0;k:2", "k:2;j:2"}, "i:0;j:2"},              // empty output
  };
  uint64_t seed = 10;
  for (const auto& c : cases) {
    std::vector<HostTensor> hs;
    std::vector<Tensor> ts;
    for (const char* s : c.inputs) {
      hs.push_back(random_tensor(Shape(s), seed++));
      ts.push_back(in(hs.back()));
    }
    SCOPED_TRACE(c.out);
    expect_near_vectors(eval(einsum(ts, Shape(c.out))), ref_einsum(hs, Shape(c.out)), 1e-4f);
  }
  // Implicit output: dimensions that appear once.
  HostTensor a = random_tensor(Shape("i:3;k:4"), 1), b = random_tensor(Shape("k:4;j:5"), 2);
  Tensor m = einsum({in(a), in(b)});
  EXPECT_EQ(m.shape(), Shape("i:3;j:5"));
  EXPECT_EQ(matmul(in(a), in(b)).shape(), Shape("i:3;j:5"));
}

TEST_F(OpsTest, EinsumOnInt32) {
  HostTensor a = HostTensor::from_ints(Shape("i:2;k:3"), {1, 2, 3, 4, 5, 6});
  HostTensor b = HostTensor::from_ints(Shape("k:3;j:1"), {1, 0, -1});
  EXPECT_EQ(eval(einsum({in(a), in(b)}, Shape("i:2;j:1"))), (std::vector<float>{-2, -2}));
}

TEST_F(OpsTest, Reductions) {
  HostTensor h = random_tensor(Shape("a:3;b:4;c:2"), 20);
  const auto v = h.to_floats();
  Tensor t = in(h);
  auto ref = [&](const Shape& out, double init, double (*f)(double, double)) {
    std::vector<double> r(out.num_elements(), init);
    for_each_index(h.shape(), [&](const Index& i, int64_t flat) {
      double& o = r[offset_of(out, i)];
      o = f(o, v[flat]);
    });
    return std::vector<float>(r.begin(), r.end());
  };
  auto sum = [](double a, double b) { return a + b; };
  auto mx = [](double a, double b) { return std::max(a, b); };
  auto mn = [](double a, double b) { return std::min(a, b); };
  expect_near_vectors(eval(reduce_sum(t, Shape("c:2;a:3"))), ref(Shape("c:2;a:3"), 0, sum));
  expect_near_vectors(eval(reduce_sum(t, Dimension{"b", 4})), ref(Shape("a:3;c:2"), 0, sum));
  expect_near_vectors(eval(reduce_sum(t)), ref(Shape(), 0, sum));
  expect_near_vectors(eval(reduce_max(t, Shape("b:4"))), ref(Shape("b:4"), -1e30, mx));
  expect_near_vectors(eval(reduce_min(t, Dimension{"a", 3})), ref(Shape("b:4;c:2"), 1e30, mn));
  std::vector<float> mean = ref(Shape("a:3"), 0, sum);
  for (auto& x : mean) x /= 8;
  expect_near_vectors(eval(reduce_mean(t, Shape("a:3"))), mean);
  // logsumexp vs the definition, with large values that would overflow exp.
  HostTensor big = HostTensor::from_floats(Shape("a:1;v:3"), {1000.f, 1000.f, 999.f});
  expect_near_vectors(eval(reduce_logsumexp(in(big), Dimension{"v", 3})),
                      {1000.f + std::log(2.f + std::exp(-1.f))});
  // Empty reductions: no reduced dims is the identity; a size-0 dim gives the identity element.
  EXPECT_EQ(eval(reduce_sum(t, h.shape())), v);
  Tensor e = zeros(mesh, Shape("a:2;z:0"));
  EXPECT_EQ(eval(reduce_sum(e, Shape("a:2"))), (std::vector<float>{0, 0}));
  EXPECT_EQ(eval(reduce_max(e, Shape("a:2")))[0], -INFINITY);
  EXPECT_EQ(eval(reduce_min(e, Shape("a:2")))[1], INFINITY);
}

// NaN propagates as in NumPy and TensorFlow: relu, sign, maximum and
// minimum, the max and min reductions, max pooling and a loss over NaN
// logits give NaN, on one core and with the NaN on one processor of a mesh.
TEST_F(OpsTest, NaNPropagatesAsInNumPy) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto is_nan = [](const std::vector<float>& v, size_t i) { return std::isnan(v.at(i)); };
  const HostTensor x = HostTensor::from_floats(Shape("a:4"), {nan, -INFINITY, INFINITY, 1.f});
  const std::vector<float> r = eval(relu(in(x)));
  EXPECT_TRUE(is_nan(r, 0));
  EXPECT_EQ(std::vector<float>(r.begin() + 1, r.end()), (std::vector<float>{0, INFINITY, 1}));
  EXPECT_TRUE(is_nan(eval(sign(in(x))), 0));
  const HostTensor m = HostTensor::from_floats(Shape("a:4"), {nan, 1, 2, 3});
  const HostTensor ones_4 = HostTensor::from_floats(Shape("a:4"), {1, 1, 1, nan});
  EXPECT_TRUE(is_nan(eval(reduce_max(in(m))), 0));
  EXPECT_TRUE(is_nan(eval(reduce_min(in(m))), 0));
  const std::vector<float> mx = eval(maximum(in(m), in(ones_4)));
  const std::vector<float> mn = eval(minimum(in(ones_4), in(m)));
  for (size_t i : {0, 3}) EXPECT_TRUE(is_nan(mx, i) && is_nan(mn, i)) << i;
  EXPECT_EQ(mx[1], 1.f);
  EXPECT_EQ(mn[2], 1.f);
  const HostTensor img = HostTensor::from_floats(Shape("b:1;h:2;w:2;c:1"), {1, nan, 3, 4});
  EXPECT_TRUE(is_nan(eval(max_pool(in(img), {2, 2}, {2, 2})), 0));
  // The NaN on the second of two processors: the allreduce of the max and
  // a loss over the logits carry it.
  for (const char* layout : {"", "a:x"}) {
    SCOPED_TRACE(layout);
    Graph g2;
    Mesh mesh2(g2, "m");
    const Tensor p = placeholder(mesh2, Shape("a:4"), float32, "p");
    const Tensor logits = placeholder(mesh2, Shape("a:4;v:3"), float32, "logits");
    const Dimension v{"v", 3};
    const Tensor targets = one_hot(zeros(mesh2, Shape("a:4"), int32), v);
    const Tensor loss = reduce_mean(softmax_cross_entropy_with_logits(logits, targets, v));
    const Tensor largest = reduce_max(p);
    Session sess(g2, testing::mesh_config(*layout ? "x:2" : "", layout));
    HostTensor lv = HostTensor::from_floats(Shape("a:4;v:3"), std::vector<float>(12, 0.5f));
    lv.data<float>()[10] = nan;
    const auto out =
        sess.run({largest, loss},
                 {{p, HostTensor::from_floats(Shape("a:4"), {1, 2, 3, nan})}, {logits, lv}});
    EXPECT_TRUE(std::isnan(out[0].to_floats()[0]));
    EXPECT_TRUE(std::isnan(out[1].to_floats()[0]));
  }
}

TEST_F(OpsTest, SoftmaxFamily) {
  HostTensor h = random_tensor(Shape("b:2;v:5"), 21, -3.f, 3.f);
  const auto v = h.to_floats();
  std::vector<float> sm(10), lsm(10);
  for (int b = 0; b < 2; ++b) {
    double z = 0;
    for (int i = 0; i < 5; ++i) z += std::exp(v[b * 5 + i]);
    for (int i = 0; i < 5; ++i) {
      sm[b * 5 + i] = static_cast<float>(std::exp(v[b * 5 + i]) / z);
      lsm[b * 5 + i] = static_cast<float>(v[b * 5 + i] - std::log(z));
    }
  }
  const Dimension vd{"v", 5};
  expect_near_vectors(eval(softmax(in(h), vd)), sm);
  expect_near_vectors(eval(log_softmax(in(h), vd)), lsm);
  // Cross-entropy against one-hot targets is -log_softmax at the label.
  HostTensor labels = HostTensor::from_ints(Shape("b:2"), {3, 0});
  Tensor xent = softmax_cross_entropy_with_logits(in(h), one_hot(in(labels), vd), vd);
  expect_near_vectors(eval(xent), {-lsm[3], -lsm[5]});
  // z-loss adds z * logsumexp^2.
  Tensor zx = softmax_cross_entropy_with_logits(in(h), one_hot(in(labels), vd), vd, 0.1f);
  const float lse0 = v[3] - lsm[3], lse1 = v[5] - lsm[5];
  expect_near_vectors(eval(zx), {-lsm[3] + 0.1f * lse0 * lse0, -lsm[5] + 0.1f * lse1 * lse1});
}

TEST_F(OpsTest, TopKAsMeshTensorFlow) {
  HostTensor h = HostTensor::from_floats(Shape("b:2;v:5"), {1, 5, 3, 5, 2, -1, -4, 0, 7, 2});
  auto [values, indices] = top_k(in(h), Dimension{"v", 5}, Dimension{"k", 3});
  EXPECT_EQ(values.shape(), Shape("b:2;k:3"));
  EXPECT_EQ(indices.dtype(), int32);
  EXPECT_EQ(eval(values), (std::vector<float>{5, 5, 3, 7, 2, 0}));
  EXPECT_EQ(eval(indices), (std::vector<float>{1, 3, 2, 3, 4, 2}));  // ties: lower index first
  // Along a leading dimension.
  auto [v2, i2] = top_k(in(h), Dimension{"b", 2}, Dimension{"k", 1});
  EXPECT_EQ(eval(i2), (std::vector<float>{0, 0, 0, 1, 0}));
}

TEST_F(OpsTest, ReshapeRenameTranspose) {
  HostTensor h = random_tensor(Shape("a:2;b:3;c:4"), 30);
  const auto v = h.to_floats();
  EXPECT_EQ(eval(reshape(in(h), Shape("x:6;y:4"))), v);
  Tensor r = rename_dimension(in(h), "b", "bb");
  EXPECT_EQ(r.shape(), Shape("a:2;bb:3;c:4"));
  EXPECT_EQ(eval(r), v);
  const Shape ts("c:4;a:2;b:3");
  std::vector<float> want(24);
  for_each_index(ts,
                 [&](const Index& i, int64_t flat) { want[flat] = v[offset_of(h.shape(), i)]; });
  EXPECT_EQ(eval(transpose(in(h), ts)), want);
  // broadcast adds dimensions.
  HostTensor s = HostTensor::from_floats(Shape("a:2"), {1, 2});
  EXPECT_EQ(eval(broadcast(in(s), Shape("k:3;a:2"))), (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST_F(OpsTest, SlicePadConcatSplitStackUnstack) {
  HostTensor h = HostTensor::from_floats(Shape("a:2;b:4"), {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor t = in(h);
  EXPECT_EQ(eval(slice(t, 1, 2, "b")), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(slice(t, 1, 2, "b").shape(), Shape("a:2;b:2"));
  EXPECT_EQ(eval(slice(t, 1, 1, "a")), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(eval(pad(t, 1, 2, "a")),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(eval(pad(slice(t, 0, 1, "b"), 0, 1, "b")), (std::vector<float>{0, 0, 4, 0}));
  HostTensor u = HostTensor::from_floats(Shape("b:1;a:2"), {8, 9});  // other order
  Tensor c = concat({t, in(u)}, "b");
  EXPECT_EQ(c.shape(), Shape("a:2;b:5"));
  EXPECT_EQ(eval(c), (std::vector<float>{0, 1, 2, 3, 8, 4, 5, 6, 7, 9}));
  auto parts = split(t, Dimension{"b", 4}, {1, 3});
  EXPECT_EQ(eval(parts[0]), (std::vector<float>{0, 4}));
  EXPECT_EQ(eval(parts[1]), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  auto halves = split(t, Dimension{"b", 4}, 2);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(eval(halves[1]), (std::vector<float>{2, 3, 6, 7}));
  EXPECT_THROW(split(t, Dimension{"b", 4}, 3), ValueError);
  auto rows = unstack(t, Dimension{"a", 2});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].shape(), Shape("b:4"));
  EXPECT_EQ(eval(rows[1]), (std::vector<float>{4, 5, 6, 7}));
  Tensor st = stack(rows, "s", 1);
  EXPECT_EQ(st.shape(), Shape("b:4;s:2"));
  EXPECT_EQ(eval(st), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST_F(OpsTest, Shift) {
  HostTensor h = HostTensor::from_floats(Shape("a:2;b:4"), {0, 1, 2, 3, 4, 5, 6, 7});
  const Dimension b{"b", 4};
  EXPECT_EQ(eval(shift(in(h), 1, b, false)), (std::vector<float>{0, 0, 1, 2, 0, 4, 5, 6}));
  EXPECT_EQ(eval(shift(in(h), -2, b, false)), (std::vector<float>{2, 3, 0, 0, 6, 7, 0, 0}));
  EXPECT_EQ(eval(shift(in(h), 1, b, true)), (std::vector<float>{3, 0, 1, 2, 7, 4, 5, 6}));
  EXPECT_EQ(eval(shift(in(h), -5, b, true)), (std::vector<float>{1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(eval(shift(in(h), 9, b, false)), std::vector<float>(8, 0.f));
  EXPECT_EQ(eval(shift(in(h), 1, Dimension{"a", 2}, false)),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3}));
}

TEST_F(OpsTest, OneHotRangeGather) {
  HostTensor idx = HostTensor::from_ints(Shape("b:3"), {2, 0, 7});
  Tensor oh = one_hot(in(idx), Dimension{"v", 3}, 5.f, -1.f);
  EXPECT_EQ(oh.shape(), Shape("b:3;v:3"));
  EXPECT_EQ(eval(oh), (std::vector<float>{-1, -1, 5, 5, -1, -1, -1, -1, -1}));  // 7: off everywhere
  Tensor r = range(mesh, Dimension{"n", 4});
  EXPECT_EQ(r.dtype(), int32);
  EXPECT_EQ(eval(r), (std::vector<float>{0, 1, 2, 3}));
  HostTensor w = HostTensor::from_floats(Shape("e:2;v:3"), {0, 1, 2, 10, 11, 12});
  Tensor gth = gather(in(w), in(idx), Dimension{"v", 3});
  EXPECT_EQ(gth.shape(), Shape("b:3;e:2"));
  EXPECT_EQ(eval(gth), (std::vector<float>{2, 12, 0, 10, 0, 0}));  // out of range: zeros
}

TEST_F(OpsTest, RandomIsCounterBasedAndLayoutFree) {
  const Shape s("a:64;b:64");
  Tensor u = random_uniform(mesh, s, -1.f, 1.f, 42);
  Tensor n = random_normal(mesh, s, 0.f, 2.f, 42);
  Session session(g);
  const auto u0 = session.run(u).to_floats();
  const auto u1 = session.run(u).to_floats();
  EXPECT_NE(u0, u1);  // the run counter moves the stream on
  session.set_run_counter(0);
  EXPECT_EQ(session.run(u).to_floats(), u0);  // and replays it
  double mean = 0, var = 0;
  for (float x : u0) {
    EXPECT_GE(x, -1.f);
    EXPECT_LT(x, 1.f);
    mean += x;
  }
  EXPECT_NEAR(mean / u0.size(), 0.0, 0.05);
  const auto nv = session.run(n).to_floats();
  mean = 0;
  for (float x : nv) mean += x;
  mean /= nv.size();
  for (float x : nv) var += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(std::sqrt(var / nv.size()), 2.0, 0.1);
  // Another graph with the same seed and shape draws the same numbers: values
  // depend on (seed, run, logical index) only.
  Graph g2;
  Mesh m2(g2, "other");
  Tensor u2 = random_uniform(m2, s, -1.f, 1.f, 42);
  Session s2(g2);
  EXPECT_EQ(s2.run(u2).to_floats(), u0);
}

TEST_F(OpsTest, DropoutKeepsExpectation) {
  Tensor x = ones(mesh, Shape("a:100;b:100"));
  Tensor d = dropout(x, 0.75f, 3);
  const auto v = eval(d);
  int kept = 0;
  for (float e : v) {
    EXPECT_TRUE(e == 0.f || std::fabs(e - 1.f / 0.75f) < 1e-6f);
    kept += e != 0.f;
  }
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
  // A noise shape broadcasts one mask over the missing dimensions.
  Shape ns("a:100");
  const auto w = eval(dropout(x, 0.5f, 3, &ns));
  for (int i = 0; i < 100; ++i)
    for (int j = 1; j < 100; ++j) EXPECT_EQ(w[i * 100 + j], w[i * 100]);
  EXPECT_EQ(dropout(x, 1.0f), x);
}

}  // namespace
}  // namespace mtf
