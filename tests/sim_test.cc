// The torus simulator: topology presets and overrides, logical-to-physical
// rings, the alpha-beta closed forms of the collectives, link contention,
// the paper's two-layer communication formulas, functional runs equal to
// the in-process SIMD run bit for bit, cost-only runs with the same times,
// and clear errors (wrong core count, out of memory, mismatched collectives).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "expect_error.h"
#include "lowering/program.h"
#include "mtf/collectives.h"
#include "sim/engine.h"
#include "sim/scheduler.h"
#include "test_util.h"

namespace mtf {
namespace {

// A 1-D or 2-D torus of one-core chips with round figures.
Topology ring_topology(std::vector<int> chips, double alpha = 1e-6, double bw = 1e9,
                       bool wrap = true) {
  Topology t;
  t.name = "test";
  t.chips = std::move(chips);
  t.wraparound = wrap;
  t.cores_per_chip = 1;
  t.link_latency = alpha;
  t.link_bandwidth = bw;
  t.core_flops = 1e12;
  t.chip_memory_bandwidth = 1e11;
  return t;
}

// Runs `body` on every core of a simulated machine; returns the step time.
// ring_timing false: every collective message by message.
double simulate(const Topology& topo, const MeshShape& mesh,
                const std::function<void(Transport&)>& body, SimReport* report = nullptr,
                bool ring_timing = true) {
  SimOptions o;
  o.topology = topo;
  o.mode = SimMode::kCostOnly;
  o.ring_timing = ring_timing;
  sim::Engine engine(o, mesh);
  Program empty;
  empty.mesh = mesh;
  SimReport r = engine.run(empty, [&](Transport& t, StepHooks&) { body(t); });
  if (report) *report = r;
  return r.step_time;
}

void expect_within(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::abs(got - want), rel * want) << what << ": got " << got << " want " << want;
}

TEST(SimTopology, PresetsAndOverrides) {
  const Topology v2 = Topology::preset("tpu-v2-512");
  EXPECT_EQ(v2.num_cores(), 512);
  EXPECT_EQ(v2.chips, (std::vector<int>{16, 16}));
  EXPECT_DOUBLE_EQ(v2.core_flops, 22.5e12);
  EXPECT_FALSE(v2.sources.empty());
  EXPECT_EQ(Topology::preset("tpu-v3-2048").num_cores(), 2048);
  EXPECT_EQ(Topology::preset("tpu-v4-4x4x4").chips.size(), 3u);
  testing::expect_error<ValueError>([&] { Topology::preset("tpu-v9"); }, {"tpu-v2-512"});
  Topology t = v2;
  t.apply_overrides("link_bandwidth=50e9, chips=8x8;wraparound=false");
  EXPECT_DOUBLE_EQ(t.link_bandwidth, 50e9);
  EXPECT_EQ(t.num_cores(), 128);
  EXPECT_FALSE(t.wraparound);
  EXPECT_THROW(t.apply_overrides("link_speed=1"), ValueError);
  EXPECT_THROW(t.apply_overrides("link_bandwidth=-1"), ValueError);
  EXPECT_THROW(t.apply_overrides("chips=0x4"), ValueError);
  EXPECT_THROW(t.apply_overrides("core_flops"), ValueError);

  const std::string path = ::testing::TempDir() + "/topo.txt";
  std::ofstream(path) << "# a small machine\nchips = 4x4\ncores_per_chip = 2\nlink_latency = x\n";
  Topology f;
  testing::expect_error<ValueError>([&] { f.load_file(path); }, {"topo.txt:4"});
  EXPECT_EQ(f.num_cores(), 32);
  EXPECT_THROW(f.load_file(path + ".missing"), IoError);
}

TEST(SimMapping, LogicalAxesBecomeOneHopRings) {
  const Topology v2 = Topology::preset("tpu-v2-512");
  for (const char* mesh : {"batch:16;model:32", "batch:32;model:16", "all:512", "a:8;b:8;c:8"}) {
    const CoreMapping m = CoreMapping::automatic(MeshShape(mesh), v2);
    std::vector<int> sorted = m.physical;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 512; ++i) ASSERT_EQ(sorted[i], i) << mesh << ": not a permutation";
    // Three logical axes of 8 on 2x16x16 cannot all be one-hop rings.
    const int limit = std::string(mesh) == "a:8;b:8;c:8" ? 4 : 1;
    for (const auto& r : m.rings) EXPECT_LE(r.max_hops, limit) << mesh << " axis " << r.axis;
  }
  // Each axis of a 2-D mesh on a 2-D torus of the same shape: the torus rings.
  const CoreMapping t2 = CoreMapping::automatic(MeshShape("r:4;c:8"), ring_topology({4, 8}));
  for (const auto& r : t2.rings) EXPECT_EQ(r.max_hops, 1) << r.axis;
  // A part of a torus dimension: folded order, at most two hops a step.
  const CoreMapping m = CoreMapping::automatic(MeshShape("a:4;b:128"), v2);
  EXPECT_LE(m.rings[0].max_hops, 2);
  EXPECT_LE(m.rings[1].max_hops, 2);
  EXPECT_THROW(CoreMapping::automatic(MeshShape("a:8"), v2), LayoutError);
  EXPECT_THROW(CoreMapping::explicit_order(MeshShape("a:4"), ring_topology({4}), {0, 1, 1, 2}),
               ValueError);
  const CoreMapping e =
      CoreMapping::explicit_order(MeshShape("a:4"), ring_topology({4}), {0, 2, 1, 3});
  EXPECT_EQ(e.rings[0].max_hops, 2);
}

// Alpha-beta closed forms, uncontended, along one axis of 8 and over a 2-D
// torus (axis by axis).
TEST(SimCollectives, MatchClosedForms) {
  const double a = 2e-6, bw = 4e9, beta = 1 / bw;
  const int p = 8;
  const int64_t count = 2 * p * 4096;  // floats; divides evenly into chunks
  const double n = static_cast<double>(count) * 4;
  const Topology ring = ring_topology({p}, a, bw);
  const MeshShape mesh("x:8");
  std::vector<float> buf(count, 1.0f);

  double t = simulate(ring, mesh, [&](Transport& tr) {
    allreduce(tr, Group::all(p, tr.rank()), nullptr, count, float32, ReduceOp::kSum, 1);
  });
  // Bidirectional ring: half the buffer each way.
  expect_within(t, 2 * (p - 1) * a + 2.0 * (p - 1) / p * (n / 2) * beta, 0.01, "allreduce");

  t = simulate(ring, mesh, [&](Transport& tr) {
    allgather(tr, Group::all(p, tr.rank()), nullptr, nullptr, count / p, float32, 2);
  });
  expect_within(t, (p - 1) * a + (p - 1.0) / p * n * beta, 0.01, "allgather");

  t = simulate(ring, mesh, [&](Transport& tr) {
    reduce_scatter(tr, Group::all(p, tr.rank()), nullptr, nullptr, count / p, float32,
                   ReduceOp::kSum, 3);
  });
  expect_within(t, (p - 1) * a + (p - 1.0) / p * n * beta, 0.01, "reduce_scatter");

  // Alltoall over two cores: one exchange of half the buffer.
  t = simulate(ring_topology({2}, a, bw), MeshShape("x:2"), [&](Transport& tr) {
    alltoall(tr, Group::all(2, tr.rank()), nullptr, nullptr, count / 2, float32, 4);
  });
  expect_within(t, a + n / 2 * beta, 0.01, "alltoall");

  // Over three cores the pairwise exchange is still uncontended: one hop
  // forward, then one hop backward.
  t = simulate(ring_topology({3}, a, bw), MeshShape("x:3"), [&](Transport& tr) {
    alltoall(tr, Group::all(3, tr.rank()), nullptr, nullptr, 4096, float32, 6);
  });
  expect_within(t, 2 * (a + 4096 * 4 * beta), 0.01, "alltoall over 3");

  // 2-D torus 4x8: allreduce over both axes goes one axis after the other,
  // each with the whole buffer.
  const MeshShape m2("r:4;c:8");
  t = simulate(ring_topology({4, 8}, a, bw), m2, [&](Transport& tr) {
    allreduce_over_axes(tr, m2, tr.rank(), {0, 1}, nullptr, count, float32, ReduceOp::kSum, 5);
  });
  auto ring_allreduce = [&](int q) { return 2 * (q - 1) * a + 2.0 * (q - 1) / q * (n / 2) * beta; };
  expect_within(t, ring_allreduce(4) + ring_allreduce(8), 0.01, "2-D allreduce");
}

// Recursive doubling (small allreduces) is timed round by round at once, in
// the order its messages would be sent: the same times as message by
// message, with the group's cores arriving together or apart, on a power
// of two and with folded members.
TEST(SimCollectives, RecursiveDoublingAtOnceEqualsMessageByMessage) {
  for (int p : {2, 6, 8}) {
    const Topology topo = ring_topology({p}, 1e-6, 1e9);
    const MeshShape mesh(std::string("x:") + std::to_string(p));
    for (bool skewed : {false, true}) {
      auto body = [&](Transport& t) {
        if (skewed && t.rank() == 0) t.send(1, 9, nullptr, 1 << 20);
        if (skewed && t.rank() == 1) t.recv(0, 9, nullptr, 1 << 20);
        allreduce(t, Group::all(p, t.rank()), nullptr, 1024, float32, ReduceOp::kSum, 1);
        // A second round among the even cores (folded members when there
        // are 6), while the odd ones wait.
        if (t.rank() % 2 == 0) {
          Group evens;
          for (int r = 0; r < p; r += 2) evens.ranks.push_back(r);
          evens.index = t.rank() / 2;
          allreduce(t, evens, nullptr, 256, float32, ReduceOp::kSum, 2);
        }
      };
      SimReport at_once, messages;
      simulate(topo, mesh, body, &at_once, true);
      simulate(topo, mesh, body, &messages, false);
      const std::string what = std::to_string(p) + (skewed ? " cores, apart" : " cores");
      EXPECT_EQ(at_once.step_time, messages.step_time) << what;
      EXPECT_EQ(at_once.messages, messages.messages) << what;
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(at_once.per_core[r].communication, messages.per_core[r].communication) << what;
    }
  }
  // Two cores: one exchange, a latency and the buffer at the link's rate.
  const double t = simulate(ring_topology({2}, 1e-6, 1e9), MeshShape("x:2"), [](Transport& tr) {
    allreduce(tr, Group::all(2, tr.rank()), nullptr, 1024, float32, ReduceOp::kSum, 1);
  });
  expect_within(t, 1e-6 + 4096 / 1e9, 1e-9, "recursive doubling over 2");
}

TEST(SimErrors, RecursiveDoublingOfDifferentSizesIsAnErrorNotAHang) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << "exceptions on fiber stacks confuse ASan";
  for (bool at_once : {true, false}) {
    testing::expect_error<ValueError>(
        [&] {
          simulate(
              ring_topology({4}), MeshShape("x:4"),
              [](Transport& t) {
                const int64_t count = t.rank() == 3 ? 32 : 64;  // core 3 disagrees
                allreduce(t, Group::all(4, t.rank()), nullptr, count, float32, ReduceOp::kSum, 1);
              },
              nullptr, at_once);
        },
        {"different collectives or sizes"});
  }
}

TEST(SimLinks, ContentionDoublesTimeDisjointFlowsDoNot) {
  const double bw = 1e9;
  const size_t bytes = 1 << 20;
  const Topology line = ring_topology({4}, 0.0, bw, /*wrap=*/false);
  const MeshShape mesh("x:4");
  std::vector<char> data(bytes);
  // flows: (from, to) pairs; every other core idles.
  auto run = [&](std::vector<std::pair<int, int>> flows) {
    return simulate(line, mesh, [&](Transport& t) {
      for (auto [from, to] : flows)
        if (t.rank() == from) t.send(to, 7, nullptr, bytes);
      for (auto [from, to] : flows)
        if (t.rank() == to) t.recv(from, 7, nullptr, bytes);
    });
  };
  const double one = run({{0, 2}});
  expect_within(one, bytes / bw, 1e-9, "one flow");
  // 0->2 and 1->2 share the link 1->2.
  expect_within(run({{0, 2}, {1, 2}}), 2 * one, 1e-9, "shared link");
  // 0->1 and 2->3 use different links.
  expect_within(run({{0, 1}, {2, 3}}), one, 1e-9, "disjoint links");
  // Opposite directions of one link are separate links.
  expect_within(run({{1, 2}, {2, 1}}), one, 1e-9, "two directions");
}

// The paper's two-layer example y = relu(x w1) w2, trained by SGD.
struct TwoLayer {
  Graph g;
  Mesh mesh{g, "mesh"};
  Dimension batch, model, hidden;
  Tensor x, loss;
  std::vector<Operation*> train;
  TwoLayer(int64_t b, int64_t d, int64_t h)
      : batch{"batch", b}, model{"model", d}, hidden{"hidden", h} {
    x = placeholder(mesh, Shape({batch, model}), float32, "x");
    Tensor w1 = get_variable(mesh, "w1", Shape({model, hidden}));
    Tensor w2 = get_variable(mesh, "w2", Shape({hidden, model}));
    Tensor y = einsum({relu(einsum({x, w1}, Shape({batch, hidden}))), w2}, Shape({batch, model}));
    loss = reduce_mean(square(y));
    train = SgdOptimizer(0.1f).minimize(loss);
  }
};

SimReport simulate_two_layer(int64_t b, int64_t d, int64_t h, const char* mesh, const char* layout,
                             SimMode mode = SimMode::kCostOnly) {
  TwoLayer net(b, d, h);
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = ring_topology({static_cast<int>(c.mesh_shape.size())});
  if (c.mesh_shape.ndims() == 2)
    c.sim->topology = ring_topology({static_cast<int>(c.mesh_shape.dims()[0].size),
                                     static_cast<int>(c.mesh_shape.dims()[1].size)});
  c.sim->mode = mode;
  Session s(net.g, c);
  Feeds feeds;
  if (mode == SimMode::kFunctional) feeds = {{net.x, testing::random_tensor(net.x.shape(), 3)}};
  s.run({net.loss}, feeds, net.train);
  return s.simulation_report();
}

TEST(SimTwoLayer, CommunicationFollowsThePapersFormulas) {
  struct Case {
    const char* mesh;
    const char* layout;
    std::function<double(double b, double d, double h)> formula;
  };
  const int r = 2, c = 4;
  const std::vector<Case> cases = {
      {"all:8", "batch:all", [](double, double d, double h) { return d * h; }},
      {"all:8", "hidden:all", [](double b, double d, double) { return b * d; }},
      {"rows:2;cols:4", "batch:rows;hidden:cols",
       [&](double b, double d, double h) { return b * d / r + d * h / c; }},
  };
  const int64_t sizes[][3] = {{64, 32, 128}, {64, 64, 256}, {128, 32, 512}};
  for (const Case& k : cases) {
    double ratio0 = 0, flops0 = 0;
    for (const auto& sz : sizes) {
      const SimReport rep = simulate_two_layer(sz[0], sz[1], sz[2], k.mesh, k.layout);
      const double sent = static_cast<double>(rep.per_core[0].bytes_sent);
      const double ratio = sent / k.formula(sz[0], sz[1], sz[2]);
      const double flops = rep.flops_per_core * 8 / (double(sz[0]) * sz[1] * sz[2]);
      if (ratio0 == 0) {
        ratio0 = ratio;
        flops0 = flops;
      }
      // The algorithm's constant stays the same as sizes change.
      EXPECT_NEAR(ratio, ratio0, 0.1 * ratio0)
          << k.layout << " b,d,h=" << sz[0] << "," << sz[1] << "," << sz[2];
      EXPECT_NEAR(flops, flops0, 0.05 * flops0) << k.layout;
    }
  }
  // b*d*h/p compute in every layout: the same flops per core.
  const double dp = simulate_two_layer(64, 64, 256, "all:8", "batch:all").flops_per_core;
  const double mp = simulate_two_layer(64, 64, 256, "all:8", "hidden:all").flops_per_core;
  const double hy =
      simulate_two_layer(64, 64, 256, "rows:2;cols:4", "batch:rows;hidden:cols").flops_per_core;
  EXPECT_NEAR(mp, dp, 0.05 * dp);
  EXPECT_NEAR(hy, dp, 0.05 * dp);
}

// Every core starts at time zero: a fiber not yet started runs before one
// that has moved its clock on. (When new fibers waited until every started
// one blocked, one half of a mesh whose halves need each other only for an
// allreduce ran its whole forward pass first, and the other half's halo
// messages then found the shared links booked into that future.)
TEST(SimScheduler, FibersNotYetStartedRunBeforeClocksMoveOn) {
  std::vector<std::string> log;
  std::thread runner([&] {
    boost::fibers::use_scheduling_algorithm<sim::TimeOrderedScheduler>();
    std::vector<boost::fibers::fiber> fibers;
    for (int r = 0; r < 3; ++r) {
      fibers.emplace_back([&, r] {
        auto& props = boost::this_fiber::properties<sim::SimProps>();
        props.order = r;
        log.push_back("start " + std::to_string(r));
        props.key = 1.0 + r;  // each moves its clock on
        boost::this_fiber::yield();
        log.push_back("at " + std::to_string(r + 1));
      });
    }
    for (auto& f : fibers) f.join();
  });
  runner.join();
  EXPECT_EQ(log,
            (std::vector<std::string>{"start 0", "start 1", "start 2", "at 1", "at 2", "at 3"}));
}

TEST(SimFunctional, EqualsInProcessSimdBitForBitAndCostOnlyTimesAgree) {
  TwoLayer a(16, 8, 32), b(16, 8, 32);
  MeshConfig simd;
  simd.mesh_shape = MeshShape("rows:2;cols:2");
  simd.layout = LayoutRules("batch:rows;hidden:cols");
  MeshConfig simc = simd;
  simc.impl = MeshImpl::kSimulated;
  simc.sim->topology = Topology::preset("tpu-v2-8");
  simc.sim->topology.apply_overrides("chips=2x1");
  Session s1(a.g, simd), s2(b.g, simc);
  for (int step = 0; step < 3; ++step) {
    Feeds f1 = {{a.x, testing::random_tensor(a.x.shape(), step)}};
    Feeds f2 = {{b.x, testing::random_tensor(b.x.shape(), step)}};
    const float l1 = s1.run({a.loss}, f1, a.train)[0].data<float>()[0];
    const float l2 = s2.run({b.loss}, f2, b.train)[0].data<float>()[0];
    EXPECT_EQ(l1, l2) << "step " << step;
  }
  for (const char* v : {"w1", "w2"}) {
    HostTensor x = s1.variable_value(v), y = s2.variable_value(v);
    for (int64_t i = 0; i < x.num_elements(); ++i)
      ASSERT_EQ(x.data<float>()[i], y.data<float>()[i]) << v << "[" << i << "]";
  }
  const SimReport functional = s2.simulation_report();
  EXPECT_GT(functional.step_time, 0);
  EXPECT_GT(functional.messages, 0);

  TwoLayer c(16, 8, 32);
  simc.sim->mode = SimMode::kCostOnly;
  Session s3(c.g, simc);
  const std::vector<HostTensor> out = s3.run({c.loss}, {}, c.train);
  EXPECT_FALSE(out[0].valid());
  const SimReport cost = s3.simulation_report();
  EXPECT_EQ(cost.step_time, functional.step_time);
  EXPECT_EQ(cost.messages, functional.messages);
  EXPECT_EQ(cost.peak_memory, functional.peak_memory);
  EXPECT_THROW(s3.variable_value("w1"), ValueError);
  EXPECT_THROW(s1.simulation_report(), ValueError);
}

TEST(SimErrors, OutOfMemoryNamesTheLargestTensors) {
  TwoLayer net(64, 256, 4096);
  MeshConfig c;
  c.mesh_shape = MeshShape("all:4");
  c.layout = LayoutRules("batch:all");
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = ring_topology({4});
  c.sim->topology.core_memory = 8 << 20;  // 8 MiB; w1 and w2 take 4 MiB each replicated
  c.sim->mode = SimMode::kCostOnly;
  Session s(net.g, c);
  testing::expect_error<OutOfMemoryError>([&] { s.run({net.loss}, {}, net.train); },
                                          {"does not fit", "w1", "batch:all"});
  // Model-parallel splits the weights and fits.
  TwoLayer net2(64, 256, 4096);
  c.layout = LayoutRules("hidden:all");
  Session s2(net2.g, c);
  s2.run({net2.loss}, {}, net2.train);
  EXPECT_LE(s2.simulation_report().peak_memory, 8 << 20);
}

TEST(SimErrors, MeshMustMatchTheMachine) {
  TwoLayer net(8, 8, 8);
  MeshConfig c;
  c.mesh_shape = MeshShape("all:4");
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = Topology::preset("tpu-v2-8");
  testing::expect_error<LayoutError>([&] { Session s(net.g, c); }, {"has 8 cores"});
}

TEST(SimErrors, MismatchedCollectivesAreADeadlockErrorNotAHang) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << "exceptions on fiber stacks confuse ASan";
  testing::expect_error<TimeoutError>(
      [&] {
        simulate(ring_topology({4}), MeshShape("x:4"), [](Transport& t) {
          // Core 3 skips the allreduce the others call.
          if (t.rank() != 3)
            allreduce(t, Group::all(4, t.rank()), nullptr, 64, float32, ReduceOp::kSum, 1);
        });
      },
      {"deadlock"});
}

TEST(SimTrace, WritesChromeTraceJson) {
  TwoLayer net(16, 8, 32);
  MeshConfig c;
  c.mesh_shape = MeshShape("all:4");
  c.layout = LayoutRules("batch:all");
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = ring_topology({4});
  c.sim->mode = SimMode::kCostOnly;
  c.sim->trace_path = ::testing::TempDir() + "/trace.json";
  Session s(net.g, c);
  s.run({net.loss}, {}, net.train);
  std::ifstream in(c.sim->trace_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\"", 0), 0u);
  EXPECT_NE(text.find("\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(text.find("allreduce"), std::string::npos);
  EXPECT_NE(text.find("\"links\""), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
  const std::string table = s.simulation_report().to_table();
  EXPECT_NE(table.find("step time"), std::string::npos) << table;
  const std::string json = s.simulation_report().to_json();
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
}

}  // namespace
}  // namespace mtf
