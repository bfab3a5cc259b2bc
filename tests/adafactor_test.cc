// Adafactor against a hand computation of Mesh TensorFlow's update rule,
// factored and not, with and without first moment, parameter scaling and
// clipping; its slots; its layout invariance.
#include <cctype>
#include <cmath>
#include <string>

#include "expect_error.h"
#include "test_util.h"

namespace mtf {
namespace {

constexpr int R = 4, C = 3;

// Minimises 0.5 * sum((w - target)^2) (gradient w - target) for `steps`
// steps by the update rule written out in doubles.
std::vector<double> reference(const AdafactorOptions& o, bool factored, std::vector<double> w,
                              const std::vector<double>& target, int steps) {
  std::vector<double> vr(C, 0), vc(R, 0), v(R * C, 0), m(R * C, 0);
  for (int t = 0; t < steps; ++t) {
    std::vector<double> g(R * C), g2(R * C), x(R * C);
    for (int i = 0; i < R * C; ++i) {
      g[i] = w[i] - target[i];
      g2[i] = g[i] * g[i] + o.epsilon1;
    }
    double decay = 1 - std::pow(t + 1.0, -o.decay_exponent);
    const std::string& dr = o.decay_rate;
    if (dr.rfind("pow(", 0) == 0) decay = 1 - std::pow(t + 1.0, -std::stod(dr.substr(4)));
    if (dr.rfind("adam(", 0) == 0) {
      const double b = std::stod(dr.substr(5));
      decay = b * (1 - std::pow(b, t)) / (1 - std::pow(b, t + 1.0));
    }
    if (!dr.empty() && std::isdigit(static_cast<unsigned char>(dr[0]))) decay = std::stod(dr);
    const double mix = 1 - decay;
    const bool default_rate =
        o.learning_rate.is_constant() && o.learning_rate.constant_value() == 0;
    double lr = default_rate ? std::min(1 / std::sqrt(t + 1.0), 0.01) : o.learning_rate.at(t + 1);
    if (default_rate && !o.multiply_by_parameter_scale) lr *= 0.05;
    if (factored) {
      // d0 = r (largest), d1 = c: vr has shape [c] (mean over r), vc [r] (mean over c).
      for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int r = 0; r < R; ++r) s += g2[r * C + c];
        vr[c] = vr[c] * decay + s / R * mix;
      }
      for (int r = 0; r < R; ++r) {
        double s = 0;
        for (int c = 0; c < C; ++c) s += g2[r * C + c];
        vc[r] = vc[r] * decay + s / C * mix;
      }
      double vr_mean = 0;
      for (double a : vr) vr_mean += a / C;
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c)
          x[r * C + c] = g[r * C + c] / std::sqrt(vr[c] / vr_mean) / std::sqrt(vc[r]);
    } else {
      for (int i = 0; i < R * C; ++i) {
        v[i] = v[i] * decay + g2[i] * mix;
        x[i] = g[i] / std::sqrt(v[i]);
      }
    }
    auto rms = [](const std::vector<double>& a) {
      double s = 0;
      for (double e : a) s += e * e;
      return std::sqrt(s / a.size());
    };
    if (o.clipping_threshold > 0) {
      const double denom = std::max(1.0, rms(x) / o.clipping_threshold);
      for (double& e : x) e /= denom;
    }
    // The variable is "w"; a pattern excluding it is the only one used here.
    const bool scaled = o.multiply_by_parameter_scale && o.exclude_from_parameter_scale.empty();
    const double scale = scaled ? std::max(rms(w), double(o.epsilon2)) * lr : lr;
    for (int i = 0; i < R * C; ++i) {
      double sub = x[i] * scale;
      if (o.beta1 > 0) sub = m[i] = m[i] * o.beta1 + sub * (1 - o.beta1);
      w[i] -= sub;
    }
  }
  return w;
}

std::vector<double> run_adafactor(const AdafactorOptions& o, const std::vector<double>& w0,
                                  const std::vector<double>& target, int steps,
                                  std::vector<std::string>* slot_names = nullptr) {
  Graph g;
  Mesh mesh(g, "m");
  const Shape shape("r:4;c:3");
  Tensor w = get_variable(mesh, "w", shape, Initializer::zeros());
  std::vector<float> tf(target.begin(), target.end());
  Tensor loss =
      reduce_sum(square(w - import_host(mesh, HostTensor::from_floats(shape, tf)))) * 0.5f;
  AdafactorOptimizer opt(o);
  auto updates = opt.minimize(loss);
  Session s(g);
  s.set_variable_value("w",
                       HostTensor::from_floats(shape, std::vector<float>(w0.begin(), w0.end())));
  for (int i = 0; i < steps; ++i) s.run({}, {}, updates);
  if (slot_names) *slot_names = s.variable_names();
  const auto got = s.variable_value("w").to_floats();
  return std::vector<double>(got.begin(), got.end());
}

TEST(AdafactorTest, FollowsTheUpdateRuleByHand) {
  std::vector<double> w0(R * C), target(R * C);
  for (int i = 0; i < R * C; ++i) {
    w0[i] = std::sin(i + 1.0);
    target[i] = 0.3 * std::cos(2.0 * i);
  }
  struct Case {
    const char* what;
    bool factored;
    AdafactorOptions o;
  };
  std::vector<Case> cases;
  AdafactorOptions base;
  base.min_dim_size_to_factor = 2;
  cases.push_back({"defaults, factored", true, base});
  AdafactorOptions unf = base;
  unf.factored = false;
  cases.push_back({"not factored", false, unf});
  AdafactorOptions small = base;
  small.min_dim_size_to_factor = 4;  // c:3 is below it
  cases.push_back({"too small to factor", false, small});
  AdafactorOptions mom = base;
  mom.beta1 = 0.9f;
  mom.learning_rate = 0.05f;
  cases.push_back({"first moment, fixed learning rate", true, mom});
  AdafactorOptions scheduled = base;
  scheduled.learning_rate = "0.2*warmup(3) until 3 then 0.05*cosine(4)";
  cases.push_back({"a scheduled learning rate", true, scheduled});
  AdafactorOptions noscale = base;
  noscale.multiply_by_parameter_scale = false;
  noscale.clipping_threshold = 0.5f;
  cases.push_back({"no parameter scale, tighter clipping", true, noscale});
  AdafactorOptions noclip = unf;
  noclip.clipping_threshold = 0;
  cases.push_back({"no clipping", false, noclip});
  AdafactorOptions pow_rate = base;
  pow_rate.decay_rate = "pow(0.5)";
  pow_rate.epsilon1 = 1e-3f;  // large enough to show in the update
  cases.push_back({"decay_rate pow(0.5), epsilon1 1e-3", true, pow_rate});
  AdafactorOptions adam_rate = unf;
  adam_rate.decay_rate = "adam(0.9)";
  adam_rate.epsilon2 = 2.0f;  // above the weights' RMS: the scale is epsilon2
  cases.push_back({"decay_rate adam(0.9), epsilon2 2", false, adam_rate});
  AdafactorOptions constant_rate = base;
  constant_rate.decay_rate = "0.5";
  cases.push_back({"a constant decay_rate", true, constant_rate});
  AdafactorOptions excluded = base;
  excluded.exclude_from_parameter_scale = {"^w$"};
  excluded.learning_rate = 0.05f;
  cases.push_back({"excluded from parameter scale", true, excluded});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const auto want = reference(c.o, c.factored, w0, target, 4);
    const auto got = run_adafactor(c.o, w0, target, 4);
    for (int i = 0; i < R * C; ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << "element " << i;
    // It moved: the test would notice an optimizer that did nothing.
    EXPECT_GT(std::fabs(got[0] - w0[0]), 1e-4);
  }
}

TEST(AdafactorTest, SlotsAndStepAreVariables) {
  std::vector<double> w0(R * C, 0.5), target(R * C, 0.0);
  AdafactorOptions o;
  o.min_dim_size_to_factor = 2;
  o.beta1 = 0.5f;
  std::vector<std::string> names;
  run_adafactor(o, w0, target, 1, &names);
  for (const char* want : {"adafactor/step", "w/adafactor_vr", "w/adafactor_vc", "w/adafactor_m"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(std::find(names.begin(), names.end(), "w/adafactor_v"), names.end());
}

TEST(AdafactorTest, FactoredDimsAreTheTwoLargest) {
  AdafactorOptimizer opt;
  EXPECT_EQ(opt.factored_dims(Shape("a:64;b:128;c:32")),
            (std::vector<Dimension>{{"b", 128}, {"a", 64}}));
  EXPECT_TRUE(opt.factored_dims(Shape("a:1024")).empty());
  EXPECT_TRUE(opt.factored_dims(Shape("a:1024;b:16")).empty());  // below 32
}

TEST(AdafactorTest, BadOptionsAreErrors) {
  auto refused = [](AdafactorOptions o, const char* needle) {
    testing::expect_error<ValueError>(
        [&] { run_adafactor(o, std::vector<double>(R * C), std::vector<double>(R * C), 1); },
        needle);
  };
  AdafactorOptions o;
  o.beta1 = 1.5f;
  refused(o, "0 <= beta1 < 1");
  for (const char* bad : {"pow(2)", "adam(1)", "1.5", "adma(0.9)", "pow(0.8", "-0.1"}) {
    SCOPED_TRACE(bad);
    AdafactorOptions d;
    d.decay_rate = bad;
    refused(d, "decay_rate \"");
  }
  AdafactorOptions p;
  p.exclude_from_parameter_scale = {"[a-"};
  refused(p, "exclude_from_parameter_scale: \"[a-\" is not a regular expression");
}

TEST(AdafactorTest, SameUpdatesUnderEveryLayout) {
  auto train = [](const MeshConfig& cfg) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor w = get_variable(mesh, "w", Shape("r:4;c:64"), Initializer::normal(0, 1));
    Tensor x = random_normal(mesh, Shape("b:8;r:4"), 0, 1, 5);
    Tensor loss = reduce_mean(square(tanh(einsum({x, w}, Shape("b:8;c:64")))));
    auto updates = AdafactorOptimizer().minimize(loss);
    Session s(g, cfg);
    for (int i = 0; i < 3; ++i) s.run({}, {}, updates);
    return s.variable_value("w");
  };
  const HostTensor want = train({});
  for (const char* layout : {"c:all", "r:all", "b:all"}) {
    MeshConfig cfg;
    cfg.mesh_shape = MeshShape("all:2");
    cfg.layout = LayoutRules(layout);
    testing::expect_close(train(cfg), want, layout);
  }
}

}  // namespace
}  // namespace mtf
