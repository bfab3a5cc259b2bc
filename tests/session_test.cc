// Sessions: variables, assignment semantics, optimizers, program text.
#include <cmath>
#include <type_traits>

#include "test_util.h"

namespace mtf {
namespace {

// assign_slice writes its rows and keeps the others, on one core and with
// the sliced dimension split (the slice then spans two processors).
TEST(SessionTest, AssignSliceReplacesItsPositionsOnly) {
  for (const char* layout : {"", "a:rows"}) {
    SCOPED_TRACE(layout);
    Graph g;
    Mesh mesh(g, "m");
    const Tensor v = get_variable(mesh, "v", Shape("a:8;b:2"), Initializer::constant(1.f));
    const Tensor x = placeholder(mesh, Shape("a:4;b:2"), float32, "x");
    Operation* write = assign_slice(v, x, 2, "a");
    Session s(g, testing::mesh_config(*layout ? "rows:2" : "all:1", layout));
    s.run(std::vector<Tensor>{},
          {{x, HostTensor::from_floats(Shape("a:4;b:2"), {2, 3, 4, 5, 6, 7, 8, 9})}}, {write});
    EXPECT_EQ(s.variable_value("v").to_floats(),
              (std::vector<float>{1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1}));
    EXPECT_THROW(assign_slice(v, x, 5, "a"), ShapeError);  // past the end
    EXPECT_THROW(assign_slice(v, x, 0, "b"), ShapeError);  // x's a is not v's
  }
}

TEST(SessionTest, AssignmentsTakeEffectAfterTheRun) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor v = get_variable(mesh, "v", Shape("a:2"), Initializer::constant(1.f));
  Operation* inc = assign_add(v, constant(mesh, 2.f));
  Session s(g);
  // The fetch of v in the same run sees the old value.
  auto r = s.run({v * 1.f}, {}, {inc});
  EXPECT_EQ(r[0].to_floats(), (std::vector<float>{1, 1}));
  EXPECT_EQ(s.variable_value("v").to_floats(), (std::vector<float>{3, 3}));
  s.run({}, {}, {assign_sub(v, constant(mesh, 0.5f, Shape("a:2")))});
  EXPECT_EQ(s.variable_value("v").to_floats(), (std::vector<float>{2.5f, 2.5f}));
  s.set_variable_value("v", HostTensor::from_floats(Shape("a:2"), {7, 8}));
  EXPECT_EQ(s.run(v).to_floats(), (std::vector<float>{7, 8}));
  s.run({}, {}, {assign(v, constant(mesh, 0.f))});
  EXPECT_EQ(s.run(v).to_floats(), (std::vector<float>{0, 0}));
}

// A braced fetch list is a list, whatever its length; one Tensor is a value.
TEST(SessionTest, BracedFetchesAreAlwaysAList) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("a:2"), float32, "x");
  Tensor y = x * 2.f;
  Session s(g);
  const Feeds feeds{{x, HostTensor::from_floats(Shape("a:2"), {1, 2})}};
  static_assert(std::is_same_v<decltype(s.run({y}, feeds)), std::vector<HostTensor>>);
  static_assert(std::is_same_v<decltype(s.run({y})), std::vector<HostTensor>>);
  static_assert(std::is_same_v<decltype(s.run(y, feeds)), HostTensor>);
  EXPECT_EQ(s.run({y}, feeds)[0].to_floats(), (std::vector<float>{2, 4}));
  EXPECT_EQ(s.run({y, x}, feeds)[1].to_floats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(s.run(y, feeds).to_floats(), (std::vector<float>{2, 4}));
  EXPECT_TRUE(s.run({}, feeds).empty());
}

TEST(SessionTest, InitializersAreDeterministicAndShaped) {
  auto init = [](uint64_t seed) {
    Graph g;
    g.set_seed(seed);
    Mesh mesh(g, "m");
    get_variable(mesh, "w", Shape("i:30;o:20"));
    get_variable(mesh, "n", Shape("i:100;o:100"), Initializer::truncated_normal(0.5f));
    Session s(g);
    return std::make_pair(s.variable_value("w").to_floats(), s.variable_value("n").to_floats());
  };
  auto [w1, n1] = init(1);
  auto [w1b, n1b] = init(1);
  auto [w2, n2] = init(2);
  EXPECT_EQ(w1, w1b);
  EXPECT_NE(w1, w2);
  const float limit = std::sqrt(6.f / 50.f);  // glorot: fan_in 30, fan_out 20
  for (float x : w1) EXPECT_LE(std::fabs(x), limit);
  for (float x : n1) EXPECT_LE(std::fabs(x), 1.0f + 1e-6f);  // truncated at 2 stddev
}

TEST(SessionTest, SgdMomentumAdamFollowTheirFormulas) {
  // Minimise sum((w - 3)^2) from w = 0; compare to the update rules by hand.
  auto run = [](Optimizer& opt, int steps) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor w = get_variable(mesh, "w", Shape("a:1"), Initializer::zeros());
    Tensor loss = reduce_sum(square(w - 3.f));
    auto ops = opt.minimize(loss);
    Session s(g);
    for (int i = 0; i < steps; ++i) s.run({}, {}, ops);
    return s.variable_value("w").to_floats()[0];
  };
  SgdOptimizer sgd(0.1f);
  {
    double w = 0;
    for (int i = 0; i < 3; ++i) w -= 0.1 * 2 * (w - 3);
    EXPECT_NEAR(run(sgd, 3), w, 1e-5);
  }
  MomentumOptimizer mom(0.1f, 0.9f);
  {
    double w = 0, v = 0;
    for (int i = 0; i < 3; ++i) {
      v = 0.9 * v + 2 * (w - 3);
      w -= 0.1 * v;
    }
    EXPECT_NEAR(run(mom, 3), w, 1e-5);
  }
  AdamOptimizer adam(0.1f);
  {
    double w = 0, m = 0, v = 0;
    for (int t = 1; t <= 3; ++t) {
      double g = 2 * (w - 3);
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      double lr = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
      w -= lr * m / (std::sqrt(v) + 1e-8);
    }
    EXPECT_NEAR(run(adam, 3), w, 1e-4);
  }
}

TEST(SessionTest, ProgramTextListsStepsWithShapesAndFlops) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor a = constant(mesh, 1.f, Shape("i:2;k:3"));
  Tensor b = constant(mesh, 1.f, Shape("k:3;j:4"));
  Tensor c = einsum({a, b}, Shape("i:2;j:4"), "mm");
  Tensor unused = c * 2.f;
  (void)unused;
  Session s(g);
  const std::string text = s.program_text({c});
  EXPECT_NE(text.find("mm = einsum("), std::string::npos) << text;
  EXPECT_NE(text.find("[i:2, j:4]"), std::string::npos) << text;
  EXPECT_NE(text.find("flops=48"), std::string::npos) << text;
  EXPECT_EQ(text.find("multiply"), std::string::npos) << "unneeded ops are pruned:\n" << text;
}

TEST(SessionTest, RunsAreRepeatableBitForBit) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = import_host(mesh, testing::random_tensor(Shape("b:64;k:128"), 1));
  Tensor w = get_variable(mesh, "w", Shape("k:128;h:96"));
  Tensor y = reduce_sum(softmax(einsum({x, w}, Shape("b:64;h:96")), Dimension{"h", 96}) * 3.f,
                        Shape("h:96"));
  Session s1(g), s2(g);
  EXPECT_EQ(s1.run(y).to_floats(), s2.run(y).to_floats());
}

// MeshConfig::profile: every step of every run is timed, per program, per op
// type and per op; collectives appear under their own names; a SIMD mesh's
// processors each get their compute and collective time; without the
// option nothing is recorded.
TEST(SessionTest, ProfileTimesEveryStepPerProgram) {
  for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    Graph g;
    Mesh mesh(g, "mesh");
    const Dimension b{"b", 8}, i{"i", 16}, o{"o", 12};
    Tensor x = placeholder(mesh, Shape({b, i}), float32, "x");
    Tensor w = get_variable(mesh, "w", Shape({i, o}));
    Tensor y = reduce_sum(relu(einsum({x, w}, Shape({b, o}))));
    MeshConfig mc;
    mc.mesh_shape = MeshShape("rows:2");
    mc.layout = LayoutRules("i:rows");  // the contraction ends in an allreduce
    mc.impl = impl;
    mc.profile = true;
    Session s(g, mc);
    HostTensor xv = HostTensor::zeros(x.shape(), float32);
    for (int k = 0; k < 3; ++k) s.run(y, {{x, xv}});
    s.run(relu(x), {{x, xv}});
    const Profile p = s.profile();
    ASSERT_EQ(p.programs.size(), 2u);
    const ProgramProfile* main = &p.programs[0];
    if (main->runs != 3) main = &p.programs[1];
    ASSERT_EQ(main->runs, 3);
    EXPECT_GT(main->run_seconds, 0);
    EXPECT_LE(main->step_seconds, main->run_seconds);
    double by_op = 0, by_type = 0, flops = 0;
    bool allreduce = false;
    for (const ProfileRow& r : main->by_op) by_op += r.seconds;
    for (const ProfileRow& r : main->by_type) {
      by_type += r.seconds;
      if (r.type == "einsum") {
        flops = r.flops;
        EXPECT_EQ(r.calls, 1);
        EXPECT_GT(r.bytes, 0);
      }
      allreduce |= r.type == "allreduce";
    }
    EXPECT_NEAR(by_op, main->step_seconds, 1e-9);
    EXPECT_NEAR(by_type, main->step_seconds, 1e-9);
    EXPECT_EQ(flops, 2.0 * 8 * 8 * 12);  // one processor's half of i
    EXPECT_TRUE(allreduce);
    for (size_t k = 1; k < main->by_op.size(); ++k)
      EXPECT_GE(main->by_op[k - 1].seconds, main->by_op[k].seconds);
    const std::string text = p.to_string();
    EXPECT_NE(text.find("by op type:"), std::string::npos) << text;
    EXPECT_NE(text.find("GFLOP/s"), std::string::npos) << text;
    EXPECT_NE(text.find("3 runs"), std::string::npos) << text;
    // SIMD processors of this process are each timed; the tables are the
    // first's. The placement controller runs every device's steps itself.
    if (impl == MeshImpl::kSimd) {
      ASSERT_EQ(main->by_processor.size(), 2u);
      for (int64_t k = 0; k < 2; ++k) {
        const ProcessorTime& t = main->by_processor[static_cast<size_t>(k)];
        EXPECT_EQ(t.processor, k);
        EXPECT_GT(t.compute_seconds, 0);
        EXPECT_GT(t.collective_seconds, 0);  // the allreduce
      }
      const ProcessorTime& first = main->by_processor[0];
      EXPECT_NEAR(first.compute_seconds + first.collective_seconds, main->step_seconds, 1e-9);
      EXPECT_NE(text.find("processor 1 "), std::string::npos) << text;
    } else {
      EXPECT_TRUE(main->by_processor.empty());
      EXPECT_EQ(text.find("by processor"), std::string::npos) << text;
    }
    s.reset_profile();
    EXPECT_TRUE(s.profile().programs.empty());
  }
  Graph g;
  Mesh mesh(g, "mesh");
  Tensor c = constant(mesh, 1.0f, Shape({{"a", 4}}));
  Session plain(g);
  plain.run(c);
  EXPECT_TRUE(plain.profile().programs.empty());
  EXPECT_NE(plain.profile().to_string().find("set MeshConfig::profile"), std::string::npos);
}

}  // namespace
}  // namespace mtf
