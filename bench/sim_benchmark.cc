// The torus simulator's throughput:
// - one MLP training step (batch 512, hidden 1024) simulated on 8, 64 and 512
//   cores (data-parallel, and hybrid batch x hidden on 2-D meshes), in
//   functional and cost-only mode: wall time per simulated step and
//   simulated messages per wall second; peak RSS is printed at the end;
// - the data-parallel step (batch 2048) on 2048 cores of a TPU v3, cost-only,
//   with rings timed at once (the default) and message by message;
// - the reference, in the same run: a Boost.Fiber switch (two fibers
//   yielding to each other), to say how many switches a message costs.
// Targets: the hybrid step on 512 cores <= 5 s wall, <= 2 GiB; the
// cost-only data-parallel step on 2048 cores <= 2 s.

#include <boost/fiber/all.hpp>
#include <cstdio>

#include "models/mlp.h"
#include "models/transformer.h"
#include "paired.h"
#include "rss.h"

namespace {

using namespace mtf;

struct Case {
  const char* topology;
  const char* topology_set;
  const char* mesh;
  const char* layout;
  int64_t batch = 512;
};

const Case kCases[] = {
    {"tpu-v2-8", "", "all:8", "batch:all"},
    {"tpu-v2-8", "", "batch:2;model:4", "batch:batch;hidden:model"},
    {"tpu-v2-32", "chips=4x8", "all:64", "batch:all"},
    {"tpu-v2-32", "chips=4x8", "batch:8;model:8", "batch:batch;hidden:model"},
    {"tpu-v2-512", "", "all:512", "batch:all"},
    {"tpu-v2-512", "", "batch:16;model:32", "batch:batch;hidden:model"},
    {"tpu-v3-2048", "", "all:2048", "batch:all", 2048},
};

void BM_SimulatedMlpStep(benchmark::State& state) {
  const Case& k = kCases[state.range(0)];
  const SimMode mode = state.range(1) ? SimMode::kFunctional : SimMode::kCostOnly;
  models::MlpConfig mc;
  mc.batch_size = k.batch;
  models::Mlp mlp(mc);
  MeshConfig c;
  c.mesh_shape = MeshShape(k.mesh);
  c.layout = LayoutRules(k.layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = Topology::preset(k.topology);
  c.sim->topology.apply_overrides(k.topology_set);
  c.sim->mode = mode;
  c.sim->ring_timing = state.range(2) == 0;
  Session s(mlp.graph(), c);
  Feeds feeds;
  if (mode == SimMode::kFunctional) {
    HostTensor x(mlp.images.shape(), float32);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = (i % 255) / 255.0f;
    HostTensor y(mlp.labels.shape(), int32);
    for (int64_t i = 0; i < y.num_elements(); ++i) y.data<int32_t>()[i] = i % 10;
    feeds = {{mlp.images, x}, {mlp.labels, y}};
  }
  int64_t messages = 0;
  for (auto _ : state) {
    s.run({mlp.loss}, feeds, mlp.train_ops);
    messages += s.simulation_report().messages;
  }
  state.SetLabel(std::string(k.mesh) + " " + k.layout +
                 (c.sim->ring_timing ? "" : ", rings message by message"));
  state.counters["messages/s"] =
      benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
  state.counters["ns/message"] = benchmark::Counter(
      static_cast<double>(messages), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["simulated_ms"] = s.simulation_report().step_time * 1e3;
}

struct LmCase {
  const char* topology;
  const char* mesh;
  int64_t batch;
};

const LmCase kLmCases[] = {
    {"tpu-v2-512", "batch:16;model:32", 256},
    {"tpu-v4-16x16x16", "batch:64;model:64", 1024},
};

void BM_SimulatedPaperLmStep(benchmark::State& state) {
  const LmCase& k = kLmCases[state.range(0)];
  models::TransformerConfig tc = models::TransformerConfig::paper(262144, 256);
  tc.batch = k.batch;
  models::TransformerLm lm(tc);
  MeshConfig c;
  c.mesh_shape = MeshShape(k.mesh);
  c.layout = LayoutRules("batch:batch;vocab:model;d_ff:model;heads:model");
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = Topology::preset(k.topology);
  c.sim->mode = SimMode::kCostOnly;
  Session s(lm.graph(), c);
  int64_t messages = 0;
  for (auto _ : state) {
    s.run({lm.loss}, {}, lm.train_ops);
    messages += s.simulation_report().messages;
  }
  state.SetLabel(std::string(k.topology) + " " + k.mesh);
  state.counters["messages/s"] =
      benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
  state.counters["simulated_ms"] = s.simulation_report().step_time * 1e3;
}

void BM_FiberSwitch(benchmark::State& state) {
  const int64_t switches = 100000;
  for (auto _ : state) {
    boost::fibers::fiber a([&] {
      for (int64_t i = 0; i < switches / 2; ++i) boost::this_fiber::yield();
    });
    boost::fibers::fiber b([&] {
      for (int64_t i = 0; i < switches / 2; ++i) boost::this_fiber::yield();
    });
    a.join();
    b.join();
  }
  state.counters["ns/switch"] = benchmark::Counter(
      static_cast<double>(switches),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_FiberSwitch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulatedMlpStep)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {0, 1}, {0}})
    ->Args({4, 0, 1})
    ->Args({6, 0, 0})
    ->Args({6, 0, 1})
    ->ArgNames({"case", "functional", "messages"})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

BENCHMARK(BM_SimulatedPaperLmStep)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("case")
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

int main(int argc, char** argv) {
  mtf::bench::add_run_context();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::printf("peak RSS of the whole run: %.2f GiB\n", mtf::bench::status_mib("VmHWM") / 1024.0);
  benchmark::Shutdown();
  return 0;
}
