// Ring collectives timed at once (RingTimer) against the same runs exchanged
// message by message (SimOptions::ring_timing = false): the same messages and
// bytes, and the same step time where nothing else shares a ring's links
// while it runs; where other traffic does, the booking of late messages into
// gaps may differ from first-come-first-served by a little. Functional and
// cost-only modes time rings alike either way.
#include <string>

#include "models/mlp.h"
#include "test_util.h"

namespace mtf {
namespace {

SimReport run_mlp(const char* topology, const char* mesh, const char* layout, SimMode mode,
                  bool ring_timing) {
  models::MlpConfig mc;
  mc.batch_size = 256;
  mc.hidden = 1024;
  models::Mlp mlp(mc);
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = Topology::preset(topology);
  c.sim->mode = mode;
  c.sim->ring_timing = ring_timing;
  Session s(mlp.graph(), c);
  Feeds feeds;
  if (mode == SimMode::kFunctional) {
    feeds = {{mlp.images, testing::random_tensor(mlp.images.shape(), 1)},
             {mlp.labels, HostTensor(mlp.labels.shape(), int32)}};
  }
  s.run({mlp.loss}, feeds, mlp.train_ops);
  return s.simulation_report();
}

struct Case {
  const char* topology;
  const char* mesh;
  const char* layout;
};

TEST(SimRingTiming, AtOnceEqualsMessageByMessage) {
  // Data-parallel (one ring through every core), hybrid, and a layout whose
  // model rings share a chip's links with each other.
  const Case cases[] = {
      {"tpu-v2-32", "all:32", "batch:all"},
      {"tpu-v2-32", "batch:4;model:8", "batch:batch;hidden:model"},
      {"tpu-v2-32", "model:4;batch:8", "batch:batch;hidden:model"},
      {"tpu-v2-128", "all:128", "batch:all"},
  };
  for (const Case& k : cases) {
    const std::string what = std::string(k.mesh) + " " + k.layout;
    const SimReport at_once = run_mlp(k.topology, k.mesh, k.layout, SimMode::kCostOnly, true);
    const SimReport messages = run_mlp(k.topology, k.mesh, k.layout, SimMode::kCostOnly, false);
    EXPECT_EQ(at_once.messages, messages.messages) << what;
    EXPECT_EQ(at_once.link_bytes_max, messages.link_bytes_max) << what;
    EXPECT_EQ(at_once.step_time, messages.step_time) << what;
    ASSERT_EQ(at_once.per_core.size(), messages.per_core.size());
    for (size_t r = 0; r < at_once.per_core.size(); ++r)
      EXPECT_EQ(at_once.per_core[r].bytes_sent, messages.per_core[r].bytes_sent) << what;
  }
}

TEST(SimRingTiming, FunctionalAndCostOnlyTimeRingsAlike) {
  const SimReport f = run_mlp("tpu-v2-32", "batch:4;model:8", "batch:batch;hidden:model",
                              SimMode::kFunctional, true);
  const SimReport c =
      run_mlp("tpu-v2-32", "batch:4;model:8", "batch:batch;hidden:model", SimMode::kCostOnly, true);
  EXPECT_EQ(f.step_time, c.step_time);
  EXPECT_EQ(f.messages, c.messages);
}

}  // namespace
}  // namespace mtf
