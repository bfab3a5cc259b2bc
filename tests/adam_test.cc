// Adam and Mesh TensorFlow's AdamWeightDecayOptimizer against the update
// rule written out in doubles: bias correction on and off, decoupled weight
// decay, variables excluded by name pattern, a scheduled rate; bad options.
#include <cmath>

#include "expect_error.h"
#include "test_util.h"

namespace mtf {
namespace {

constexpr int kN = 6;

struct Param {
  std::string name;
  std::vector<double> w, target;
};

// Minimises sum over params of 0.5 * sum((w - target)^2) for `steps` steps.
std::vector<Param> reference(const AdamOptions& o, std::vector<Param> params, int steps) {
  std::vector<std::vector<double>> m(params.size(), std::vector<double>(kN, 0));
  auto v = m;
  for (int t = 1; t <= steps; ++t) {
    const double lr = o.learning_rate.at(t);
    const double lr_t = o.bias_correction ? lr * std::sqrt(1 - std::pow(double(o.beta2), t)) /
                                                (1 - std::pow(double(o.beta1), t))
                                          : lr;
    for (size_t p = 0; p < params.size(); ++p) {
      Param& q = params[p];
      const bool decayed = q.name.find("/scale") == std::string::npos;
      for (int i = 0; i < kN; ++i) {
        const double g = q.w[i] - q.target[i];
        m[p][i] = o.beta1 * m[p][i] + (1 - o.beta1) * g;
        v[p][i] = o.beta2 * v[p][i] + (1 - o.beta2) * g * g;
        double sub = lr_t * m[p][i] / (std::sqrt(v[p][i]) + o.epsilon);
        if (decayed) sub += lr * o.weight_decay_rate * q.w[i];
        q.w[i] -= sub;
      }
    }
  }
  return params;
}

std::vector<Param> start() {
  std::vector<Param> ps = {{"w", {}, {}}, {"ln/scale", {}, {}}};
  for (int i = 0; i < kN; ++i) {
    ps[0].w.push_back(std::sin(i + 1.0));
    ps[0].target.push_back(0.2 * i);
    ps[1].w.push_back(1 + 0.1 * i);
    ps[1].target.push_back(-0.5);
  }
  return ps;
}

std::vector<Param> run(Optimizer& opt, std::vector<Param> params, int steps,
                       const char* layout = "") {
  Graph g;
  Mesh mesh(g, "m");
  const Shape shape("r:3;c:2");
  Tensor loss;
  for (const Param& p : params) {
    const Tensor w = get_variable(mesh, p.name, shape, Initializer::zeros());
    const std::vector<float> t(p.target.begin(), p.target.end());
    const Tensor l = reduce_sum(square(w - import_host(mesh, HostTensor::from_floats(shape, t))));
    loss = loss.valid() ? loss + l * 0.5f : l * 0.5f;
  }
  const auto updates = opt.minimize(loss);
  Session s(g, testing::mesh_config(*layout ? "x:2" : "", layout));
  for (const Param& p : params)
    s.set_variable_value(
        p.name, HostTensor::from_floats(shape, std::vector<float>(p.w.begin(), p.w.end())));
  for (int i = 0; i < steps; ++i) s.run({}, {}, updates);
  for (Param& p : params) {
    const auto got = s.variable_value(p.name).to_floats();
    p.w.assign(got.begin(), got.end());
  }
  return params;
}

void expect_near(const std::vector<Param>& got, const std::vector<Param>& want) {
  for (size_t p = 0; p < want.size(); ++p)
    for (int i = 0; i < kN; ++i)
      EXPECT_NEAR(got[p].w[i], want[p].w[i], 2e-6) << want[p].name << " element " << i;
}

TEST(AdamTest, FollowsTheUpdateRuleByHand) {
  AdamOptions o;
  o.learning_rate = 0.05f;
  AdamOptimizer adam(o);
  const auto got = run(adam, start(), 5);
  expect_near(got, reference(o, start(), 5));
  EXPECT_GT(std::fabs(got[0].w[0] - start()[0].w[0]), 0.1);
}

TEST(AdamTest, AdamWeightDecayIsMeshTensorFlowsOnAnyLayout) {
  AdamOptions o;
  o.learning_rate = "0.1*warmup(2)";
  o.bias_correction = false;
  o.epsilon = 1e-6f;
  o.weight_decay_rate = 0.3f;
  const auto want = reference(o, start(), 5);
  for (const char* layout : {"", "c:x"}) {
    SCOPED_TRACE(layout);
    AdamWeightDecayOptimizer adamw(o.learning_rate, o.weight_decay_rate, 0.9f, 0.999f, 1e-6f,
                                   {"/scale$", "/bias$"});
    expect_near(run(adamw, start(), 5, layout), want);
  }
  // The decay is what moved the weights apart: without it they differ.
  AdamWeightDecayOptimizer plain(o.learning_rate, 0.0f);
  const auto no_decay = run(plain, start(), 5);
  EXPECT_GT(std::fabs(no_decay[0].w[0] - want[0].w[0]), 1e-3);
  // The excluded norm scale moves as without decay.
  EXPECT_NEAR(no_decay[1].w[0], want[1].w[0], 2e-6);
}

TEST(AdamTest, BiasCorrectedAdamWIsPyTorchsForm) {
  AdamOptions o;
  o.learning_rate = 0.05f;
  o.weight_decay_rate = 0.1f;
  o.exclude_from_weight_decay = {"scale"};
  AdamOptimizer adamw(o);
  expect_near(run(adamw, start(), 4), reference(o, start(), 4));
}

TEST(AdamTest, BadOptionsAreClearErrors) {
  AdamOptions o;
  o.exclude_from_weight_decay = {"(unclosed"};
  AdamOptimizer bad_pattern(o);
  testing::expect_error<ValueError>(
      [&] { run(bad_pattern, start(), 1); },
      "exclude_from_weight_decay: \"(unclosed\" is not a regular expression");
  AdamWeightDecayOptimizer negative(0.1f, -0.5f);
  testing::expect_error<ValueError>([&] { run(negative, start(), 1); }, "weight_decay_rate >= 0");
  AdamOptimizer beta(0.1f, 1.0f);
  testing::expect_error<ValueError>([&] { run(beta, start(), 1); }, "beta1, beta2 < 1");
}

}  // namespace
}  // namespace mtf
