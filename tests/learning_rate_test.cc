// Learning-rate schedules: the text form, the host formula against values
// worked out by hand, the graph's value at every step against the host's (as
// SGD applies it), and errors for malformed schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace mtf {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(LearningRateTest, FactorsByHand) {
  EXPECT_DOUBLE_EQ(LearningRate(0.25f).at(7), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate("warmup(4)").at(1), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate("warmup(4)").at(4), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate("warmup(4)").at(9), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate("rsqrt(100)").at(1), 0.1);
  EXPECT_DOUBLE_EQ(LearningRate("rsqrt(100)").at(400), 0.05);
  EXPECT_DOUBLE_EQ(LearningRate("linear_decay(10, 20)").at(10), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate("linear_decay(10, 20)").at(15), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate("linear_decay(10, 20)").at(25), 0.0);
  EXPECT_NEAR(LearningRate("cosine(8)").at(2), 0.5 * (1 + std::cos(kPi / 4)), 1e-15);
  EXPECT_DOUBLE_EQ(LearningRate("cosine(8, 0.2)").at(8), 0.2);
  EXPECT_DOUBLE_EQ(LearningRate("cosine(8, 0.2)").at(80), 0.2);
  const LearningRate pw("piecewise(0.1, 3, 0.01, 5, 0.001)");
  EXPECT_DOUBLE_EQ(pw.at(2), 0.1);
  EXPECT_DOUBLE_EQ(pw.at(3), 0.01);
  EXPECT_DOUBLE_EQ(pw.at(4), 0.01);
  EXPECT_DOUBLE_EQ(pw.at(5), 0.001);
  // The Transformer's warm-up then decay, and Adafactor's default.
  const LearningRate noam("2*warmup(100)*rsqrt(100)");
  EXPECT_DOUBLE_EQ(noam.at(50), 2 * 0.5 * 0.1);
  EXPECT_DOUBLE_EQ(noam.at(100), 0.2);
  EXPECT_DOUBLE_EQ(noam.at(400), 0.1);
  for (int64_t s : {1, 100, 9999, 10000, 40000}) {
    EXPECT_DOUBLE_EQ(LearningRate("rsqrt(10000)").at(s), std::min(0.01, 1 / std::sqrt(s * 1.0)));
  }
}

TEST(LearningRateTest, PhasesRestartTheirStepCount) {
  const LearningRate lr("0.1*warmup(2) until 4 then 0.01*warmup(2) until 3 then 0.001");
  const std::vector<double> want = {0.05, 0.1, 0.1, 0.1, 0.005, 0.01, 0.01, 0.001, 0.001};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(lr.at(static_cast<int64_t>(i) + 1), want[i]) << "step " << i + 1;
  }
}

TEST(LearningRateTest, TextRoundTrips) {
  for (const char* text :
       {"0.01", "3*warmup(10)*rsqrt(10)", " 0.5 * cosine( 100 , 0.1 ) ", "piecewise(1, 2, 3)",
        "linear_decay(0, 7) until 7 then 0.25*warmup(3)"}) {
    const LearningRate lr(text);
    const LearningRate again(lr.str());
    EXPECT_EQ(again.str(), lr.str()) << text;
    for (int64_t s = 1; s < 20; ++s) EXPECT_EQ(again.at(s), lr.at(s)) << text << " step " << s;
  }
  EXPECT_TRUE(LearningRate("0.5").is_constant());
  EXPECT_EQ(LearningRate("0.5").constant_value(), 0.5f);
  EXPECT_FALSE(LearningRate("0.5*warmup(2)").is_constant());
  EXPECT_THROW(LearningRate("warmup(2)").constant_value(), ValueError);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    LearningRate lr(text);
    ADD_FAILURE() << "\"" << text << "\" was accepted as " << lr.str();
  } catch (const ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << text << ": " << what;
    EXPECT_NE(what.find("learning rate \"" + text + "\""), std::string::npos) << what;
  }
}

TEST(LearningRateTest, MalformedSchedulesSayWhereAndWhat) {
  expect_error("", "at character 1, expected a finite number");
  expect_error("nan", "not 'nan'");
  expect_error("1e999", "a finite number");
  expect_error("-0.1", "a constant >= 0");
  expect_error("0.1*", "at character 5, expected a finite number");
  expect_error("0.1*warmpu(5)", "not 'warmpu'");
  expect_error("warmup 5", "'(' after warmup");
  expect_error("warmup(0)", "warmup(STEPS) with STEPS > 0");
  expect_error("warmup(5, 6)", "the arguments of warmup(STEPS)");
  expect_error("warmup(5", "',' or ')'");
  expect_error("linear_decay(9, 3)", "0 <= FROM_STEP < TO_STEP");
  expect_error("cosine(9, 2)", "0 <= FLOOR <= 1");
  expect_error("piecewise(1, 2)", "the arguments of piecewise");
  expect_error("piecewise(1, 5, 0.1, 3, 0.01)", "increasing steps");
  expect_error("0.1 until 0 then 0.2", "a whole step number >= 1");
  expect_error("0.1 until 5", "'then'");
  expect_error("0.1 0.2", "at character 5, expected '*', 'until' or the end");
  EXPECT_THROW(LearningRate(std::nanf("")), ValueError);
  EXPECT_THROW(LearningRate(-1.0f), ValueError);
}

// SGD on loss = sum(w) moves each element by exactly the step's rate, so
// the variable's trajectory reads the graph's schedule step by step.
std::vector<float> sgd_trajectory(std::unique_ptr<Optimizer> opt, int steps) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor w = get_variable(mesh, "w", Shape("x:2"), Initializer::zeros());
  auto updates = opt->minimize(reduce_sum(w));
  Session s(g);
  std::vector<float> out;
  for (int i = 0; i < steps; ++i) {
    s.run({}, {}, updates);
    out.push_back(-s.variable_value("w").to_floats()[1]);
  }
  return out;
}

TEST(LearningRateTest, TheGraphFollowsTheHostFormulaStepByStep) {
  for (const char* text :
       {"0.5*warmup(3)*rsqrt(3)", "cosine(5, 0.1)", "piecewise(0.3, 2, 0.2, 4, 0.1)",
        "linear_decay(2, 6)", "0.2*warmup(2) until 3 then 0.05*warmup(2)"}) {
    SCOPED_TRACE(text);
    const LearningRate lr(text);
    const auto got = sgd_trajectory(std::make_unique<SgdOptimizer>(lr), 8);
    double sum = 0;
    for (int i = 0; i < 8; ++i) {
      sum += lr.at(i + 1);
      EXPECT_NEAR(got[i], sum, 1e-6 * (1 + sum)) << "after step " << i + 1;
    }
  }
}

// A run saved mid-warm-up and restored into a new session (another mesh)
// continues the schedule where it stopped: the step is a saved variable.
TEST(LearningRateTest, ARestoredRunContinuesItsSchedule) {
  const LearningRate lr("0.5*warmup(4)*rsqrt(4)");
  const auto build = [&](Graph& g) {
    Mesh mesh(g, "m");
    Tensor w = get_variable(mesh, "w", Shape("x:4"), Initializer::zeros());
    return AdamOptimizer(lr).minimize(reduce_sum(square(w - 1.0f)));
  };
  Graph whole_graph;
  const auto whole_updates = build(whole_graph);
  Session whole(whole_graph);
  for (int i = 0; i < 6; ++i) whole.run({}, {}, whole_updates);

  const std::string path = ::testing::TempDir() + "/learning_rate_resume.h5";
  {
    Graph g;
    const auto updates = build(g);
    Session first(g);
    for (int i = 0; i < 2; ++i) first.run({}, {}, updates);
    save_checkpoint(first, path, 2);
  }
  Graph g;
  const auto updates = build(g);
  MeshConfig two_cores;
  two_cores.mesh_shape = MeshShape("all:2");
  two_cores.layout = LayoutRules("x:all");
  Session resumed(g, two_cores);
  restore_checkpoint(resumed, path);
  EXPECT_EQ(resumed.variable_value("adam/step").to_floats()[0], 2.0f);
  for (int i = 0; i < 4; ++i) resumed.run({}, {}, updates);
  const auto want = whole.variable_value("w").to_floats();
  const auto got = resumed.variable_value("w").to_floats();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  std::remove(path.c_str());
}

TEST(LearningRateTest, MomentumCountsItsStepsInAVariable) {
  const LearningRate lr("0.1*warmup(4)");
  Graph g;
  Mesh mesh(g, "m");
  Tensor w = get_variable(mesh, "w", Shape("x:2"), Initializer::zeros());
  auto updates = MomentumOptimizer(lr, 0.5f).minimize(reduce_sum(w));
  Session s(g);
  double v = 0, want = 0;
  for (int i = 1; i <= 5; ++i) {
    s.run({}, {}, updates);
    v = 0.5 * v + 1;
    want -= lr.at(i) * v;
  }
  EXPECT_NEAR(s.variable_value("w").to_floats()[0], want, 1e-6);
  EXPECT_EQ(s.variable_value("momentum/step").to_floats()[0], 5.0f);
  // A constant rate keeps no step variable (and the fused update).
  Graph g2;
  Mesh mesh2(g2, "m");
  Tensor w2 = get_variable(mesh2, "w", Shape("x:2"), Initializer::zeros());
  SgdOptimizer(0.1f).minimize(reduce_sum(w2));
  EXPECT_EQ(g2.all_variables().size(), 1u);
}

}  // namespace
}  // namespace mtf
