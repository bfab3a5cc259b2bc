// Gradient accumulation in the simulator and the layout search: a step of
// several runs reported as one (SimReport::followed_by), and a Transformer
// LM whose whole batch fits in no layout found to fit with microbatches,
// its step costed as the microbatch runs plus the update run.
#include <string>

#include "expect_error.h"
#include "models/transformer.h"
#include "mtf/auto_layout.h"
#include "mtf/mtf.h"
#include "test_util.h"

namespace mtf {
namespace {

// A 2-layer LM whose activations (8 heads of 512 x 512 attention weights per
// sequence) dominate its 7M parameters.
models::TransformerConfig activation_heavy_lm(int64_t microbatches) {
  models::TransformerConfig c;
  c.layers = 2;
  c.d_model = 512;
  c.d_ff = 2048;
  c.heads = 8;
  c.d_kv = 64;
  c.vocab = 256;
  c.length = 512;
  c.batch = 64;
  c.microbatches = microbatches;
  return c;
}

MeshConfig simulated(const std::string& mesh, const std::string& layout) {
  MeshConfig cfg;
  cfg.mesh_shape = MeshShape(mesh);
  cfg.layout = LayoutRules(layout);
  cfg.impl = MeshImpl::kSimulated;
  cfg.sim->topology = Topology::preset("tpu-v2-8");
  cfg.sim->mode = SimMode::kCostOnly;
  return cfg;
}

TEST(SimReportTest, FollowedByAddsTimesAndBytesAndKeepsTheLargerPeak) {
  models::TransformerLm lm(activation_heavy_lm(4));
  Session session(lm.graph(), simulated("x:8", "batch:x"));
  session.run({lm.loss}, {}, lm.train_ops);
  const SimReport part = session.simulation_report();
  session.run({}, {}, lm.apply_ops);
  const SimReport update = session.simulation_report();
  const SimReport step = part.followed_by(part).followed_by(update);

  EXPECT_EQ(step.runs, 3);
  EXPECT_DOUBLE_EQ(step.step_time, 2 * part.step_time + update.step_time);
  EXPECT_DOUBLE_EQ(step.flops_per_core, 2 * part.flops_per_core + update.flops_per_core);
  EXPECT_EQ(step.messages, 2 * part.messages + update.messages);
  EXPECT_NEAR(step.mean_compute(), 2 * part.mean_compute() + update.mean_compute(), 1e-12);
  EXPECT_EQ(step.per_core[3].bytes_sent,
            2 * part.per_core[3].bytes_sent + update.per_core[3].bytes_sent);
  EXPECT_EQ(step.peak_memory, std::max(part.peak_memory, update.peak_memory));
  EXPECT_EQ(step.peak_activation_memory,
            std::max(part.peak_activation_memory, update.peak_activation_memory));
  // Utilization: flops over time at the same peak.
  EXPECT_NEAR(step.utilization * step.step_time,
              2 * part.utilization * part.step_time + update.utilization * update.step_time, 1e-12);
  // The op table: a microbatch's op twice, the update's once.
  ASSERT_FALSE(part.ops.empty());
  for (const SimReport::OpRow& row : step.ops) {
    if (row.op != part.ops[0].op) continue;
    EXPECT_DOUBLE_EQ(row.time, 2 * part.ops[0].time);
  }
  EXPECT_NE(step.to_json().find("\"runs\":3"), std::string::npos);
  EXPECT_NE(step.to_table().find("(3 runs)"), std::string::npos);

  SimReport other = part;
  other.mesh = "y:8";
  testing::expect_error<ValueError>([&] { part.followed_by(other); }, {"cannot follow", "y:8"});
}

TEST(AutoLayoutAccumulationTest, AModelThatFitsOnlyWithMicrobatchesIsFound) {
  AutoLayoutOptions o;
  o.topology = Topology::preset("tpu-v2-8");
  o.memory_limit = 256.0 * (1 << 20);
  o.simulate_top = 1;
  o.time_budget = 60;
  const MeshShape mesh("x:8");

  models::TransformerLm whole(activation_heavy_lm(1));
  testing::expect_error<OutOfMemoryError>(
      [&] { auto_layout(whole.graph(), mesh, {whole.loss}, whole.train_ops, o); },
      {"no layout fits"});

  models::TransformerLm parts(activation_heavy_lm(4));
  const TrainingStep step{{parts.loss}, parts.train_ops, 4, parts.apply_ops};
  const AutoLayoutResult r = auto_layout(parts.graph(), mesh, step, o);
  ASSERT_TRUE(r.ranked.front().fits) << r.table();
  EXPECT_EQ(r.runs, 4);
  EXPECT_TRUE(r.update_run);
  EXPECT_NE(r.table().find("4 run(s) and the update run"), std::string::npos);

  // The leader's simulated time is its four microbatch runs and the update.
  ASSERT_TRUE(r.ranked.front().simulated);
  Session session(parts.graph(), simulated(r.mesh.to_string(), r.rules.to_string()));
  session.run({parts.loss}, {}, parts.train_ops);
  const double part = session.simulation_report().step_time;
  session.run({}, {}, parts.apply_ops);
  const double update = session.simulation_report().step_time;
  EXPECT_NEAR(r.ranked.front().step_time, 4 * part + update, 1e-9 * (4 * part + update));

  // One run of the same graph is estimated at about a quarter of the step.
  const AutoLayoutResult one = auto_layout(parts.graph(), mesh, {parts.loss}, parts.train_ops, o);
  for (const LayoutCandidate& c : one.ranked) {
    if (c.rules.to_string() != r.rules.to_string()) continue;
    EXPECT_GT(r.ranked.front().estimated_step_time, 4 * c.estimated_step_time);
    EXPECT_LT(r.ranked.front().estimated_step_time, 5 * c.estimated_step_time);
  }

  testing::expect_error<ValueError>(
      [&] {
        auto_layout(parts.graph(), mesh, TrainingStep{{parts.loss}, parts.train_ops, 0, {}}, o);
      },
      {"0 runs"});
}

}  // namespace
}  // namespace mtf
