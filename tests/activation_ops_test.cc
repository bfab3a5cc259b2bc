// Mesh TensorFlow's activations (swish, elu, selu, leaky_relu), floordiv and
// mod, zeros_like / ones_like and sigmoid cross-entropy: values against
// formulas evaluated in double, the one-processor bits on split layouts and
// both mesh implementations, gradients against finite differences, and the
// errors bad input gets.
#include <cmath>

#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::mesh_config;
using testing::uniform;
using V = std::vector<Tensor>;

const Shape kShape("b:4;h:6");

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Runs f on x (float32 values) on a mesh and layout; the output as floats.
std::vector<float> run_on(const MeshConfig& mc, const HostTensor& x,
                          const std::function<Tensor(const Tensor&)>& f) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor in = placeholder(mesh, x.shape(), x.dtype(), "x");
  const Tensor y = f(in);
  Session s(g, mc);
  return s.run(y, {{in, x}}).to_floats();
}

TEST(ActivationOpsTest, ValuesMatchTheirFormulas) {
  const HostTensor x = testing::random_tensor(kShape, 3, -4.f, 4.f);
  const std::vector<float> xv = x.to_floats();
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> want;
  };
  const double a = 1.6732632423543772, scale = 1.0507009873554805;
  const std::vector<Case> cases = {
      {"swish", [](const Tensor& t) { return swish(t); },
       [](double v) { return v * sigmoid_d(v); }},
      {"elu", [](const Tensor& t) { return elu(t); },
       [](double v) { return v > 0 ? v : std::exp(v) - 1; }},
      {"selu", [](const Tensor& t) { return selu(t); },
       [&](double v) { return scale * (v > 0 ? v : a * (std::exp(v) - 1)); }},
      {"leaky_relu", [](const Tensor& t) { return leaky_relu(t); },
       [](double v) { return v > 0 ? v : 0.2 * v; }},
      {"leaky_relu 0.5", [](const Tensor& t) { return leaky_relu(t, 0.5f); },
       [](double v) { return v > 0 ? v : 0.5 * v; }},
      {"zeros_like", [](const Tensor& t) { return zeros_like(t); }, [](double) { return 0.0; }},
      {"ones_like", [](const Tensor& t) { return ones_like(t); }, [](double) { return 1.0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<float> one = run_on(mesh_config("", ""), x, c.op);
    ASSERT_EQ(one.size(), xv.size());
    for (size_t i = 0; i < xv.size(); ++i)
      EXPECT_NEAR(one[i], c.want(xv[i]), 2e-6 * std::max(1.0, std::fabs(c.want(xv[i]))));
    // Elementwise: every layout and both implementations give these bits.
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      for (const char* layout : {"b:x", "h:x;b:y", "h:y"}) {
        SCOPED_TRACE(layout);
        EXPECT_EQ(run_on(mesh_config("x:2;y:2", layout, impl), x, c.op), one);
      }
    }
  }
}

TEST(ActivationOpsTest, BFloat16InputsComputeInFloat32AndRoundOnce) {
  const HostTensor x = testing::random_tensor(kShape, 4, -3.f, 3.f).as_dtype(bfloat16);
  const std::vector<float> xv = x.to_floats();
  const std::vector<float> got = run_on(mesh_config("", ""), x, [](const Tensor& t) {
    EXPECT_EQ(swish(t).dtype(), bfloat16);
    return cast(leaky_relu(t), float32);
  });
  // The scalar takes x's dtype (as a Python float does in Mesh TensorFlow).
  const float alpha = HostTensor::from_floats(Shape(), {0.2f}, bfloat16).to_floats()[0];
  for (size_t i = 0; i < xv.size(); ++i) {
    const float want = xv[i] > 0 ? xv[i] : xv[i] * alpha;
    EXPECT_EQ(got[i], HostTensor::from_floats(Shape(), {want}, bfloat16).to_floats()[0]);
  }
  // The compositions through where, exp and sigmoid take bfloat16 too (each
  // step rounded: within a few bfloat16 ulps of the float64 value).
  const std::vector<float> e = run_on(mesh_config("b:2", "b:b"), x, [](const Tensor& t) {
    return cast(elu(t) + selu(t) + swish(t), float32);
  });
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = xv[i], em1 = std::exp(std::min(v, 0.0)) - 1;
    const double want = (v > 0 ? v : em1) +
                        1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * em1) +
                        v * sigmoid_d(v);
    EXPECT_NEAR(e[i], want, 0.03 * std::max(1.0, std::fabs(want))) << "x " << v;
  }
}

TEST(ActivationOpsTest, FloorDivisionAndModuloFollowPython) {
  // Every sign combination, exact multiples and zero numerators.
  const std::vector<int32_t> av = {7, -7, 7, -7, 6, -6, 0, 1, -1, 2147483647, -2147483647 - 1, 5};
  const std::vector<int32_t> bv = {2, 2, -2, -2, 3, 3, 5, -5, 5, 2, -1, 1};
  const Shape s("n:12");
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor a = import_host(mesh, HostTensor::from_ints(s, av));
  const Tensor b = import_host(mesh, HostTensor::from_ints(s, bv));
  const Tensor af = cast(a, float32), bf = cast(b, float32);
  const Tensor q = floordiv(a, b), r = mod(a, b), qf = floordiv(af, bf), rf = mod(af, bf);
  EXPECT_EQ(q.dtype(), int32);
  Session sess(g, mesh_config("n:2", "n:n"));
  const auto out = sess.run({q, r, qf, rf});
  const auto qi = out[0].to_ints(), ri = out[1].to_ints();
  const auto qfl = out[2].to_floats(), rfl = out[3].to_floats();
  for (size_t i = 0; i < av.size(); ++i) {
    SCOPED_TRACE(std::to_string(av[i]) + " and " + std::to_string(bv[i]));
    const int64_t x = av[i], y = bv[i];
    int64_t want_q = x / y;
    if (x % y != 0 && ((x < 0) != (y < 0))) --want_q;
    const int64_t want_r = x - want_q * y;
    EXPECT_EQ(qi[i], static_cast<int32_t>(want_q));  // INT_MIN // -1 wraps, as in NumPy
    EXPECT_EQ(ri[i], want_r);
    const double fx = static_cast<float>(x), fy = static_cast<float>(y);
    EXPECT_EQ(qfl[i], static_cast<float>(std::floor(fx / fy)));
    const double m = std::fmod(fx, fy);
    EXPECT_EQ(rfl[i], static_cast<float>(m != 0 && ((m < 0) != (fy < 0)) ? m + fy : m));
  }
}

TEST(ActivationOpsTest, SigmoidCrossEntropyIsStableAndRight) {
  const Shape s("n:6");
  const std::vector<float> logits = {-100.f, -2.f, 0.f, 0.5f, 3.f, 100.f};
  const std::vector<float> targets = {0.f, 1.f, 0.5f, 0.f, 1.f, 1.f};
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor l = import_host(mesh, HostTensor::from_floats(s, logits));
  const Tensor t = import_host(mesh, HostTensor::from_floats(s, targets));
  Session sess(g);
  const auto got = sess.run(sigmoid_cross_entropy_with_logits(l, t)).to_floats();
  for (size_t i = 0; i < logits.size(); ++i) {
    const double x = logits[i], z = targets[i];
    const double want = std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::fabs(x)));
    EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, want)) << "logit " << x;
    EXPECT_TRUE(std::isfinite(got[i]));
  }
}

TEST(ActivationOpsTest, GradientsMatchFiniteDifferences) {
  const Shape ab("a:3;b:4");
  check_gradients(
      {ab}, [](const V& x) { return swish(x[0]); }, uniform(-3, 3));
  check_gradients(
      {ab}, [](const V& x) { return elu(x[0]); }, testing::away_from_zero());
  check_gradients(
      {ab}, [](const V& x) { return selu(x[0]); }, testing::away_from_zero());
  check_gradients(
      {ab}, [](const V& x) { return leaky_relu(x[0], 0.3f); }, testing::away_from_zero());
  check_gradients({ab, ab}, [](const V& x) {
    return sigmoid_cross_entropy_with_logits(x[0] * 3.f, sigmoid(x[1]));
  });
  // a in (2.2, 2.4), b in (1.3, 1.4): a / b stays in (1, 2), away from floor's jumps.
  check_gradients({ab, Shape("b:4")},
                  [](const V& x) { return mod(x[0] * 0.1f + 2.3f, x[1] * 0.05f + 1.35f); });
}

TEST(ActivationOpsTest, NoGradientThroughFloorDivisionAndNoNaNFromExpsNotTaken) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, Shape("n:3"), float32, "x");
  const Tensor loss = reduce_sum(elu(x) + selu(x) + floordiv(x, ones_like(x) * 2.f));
  const Tensor dx = gradients({loss}, {x})[0];
  Session s(g);
  // exp(200) is inf; elu's branch below 0 must not turn it into NaN.
  const auto got =
      s.run(dx, {{x, HostTensor::from_floats(Shape("n:3"), {200.f, 1.f, -1.f})}}).to_floats();
  EXPECT_FLOAT_EQ(got[0], 1.f + 1.0507009873554805f);
  EXPECT_FLOAT_EQ(got[1], 1.f + 1.0507009873554805f);
  EXPECT_NEAR(got[2], std::exp(-1.0) * (1 + 1.0507009873554805 * 1.6732632423543772), 1e-6);
}

TEST(ActivationOpsTest, BadInputIsAClearError) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor i = import_host(mesh, HostTensor::from_ints(Shape("n:2"), {4, 5}));
  const Tensor zero = import_host(mesh, HostTensor::from_ints(Shape("n:2"), {1, 0}));
  const Tensor f = placeholder(mesh, Shape("n:2"), float32, "f");
  EXPECT_THROW(elu(i), DTypeError);
  EXPECT_THROW(leaky_relu(f, 1.5f), ValueError);
  EXPECT_THROW(sigmoid_cross_entropy_with_logits(f, placeholder(mesh, Shape("m:2"))), ShapeError);
  const Tensor q = mod(i, zero);
  Session s(g);
  try {
    s.run(q);
    ADD_FAILURE() << "mod by an int32 zero did not fail";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mtf
