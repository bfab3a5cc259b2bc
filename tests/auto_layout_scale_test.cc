// auto_layout on the paper's Transformer LM and the 512-core pod: a timed
// check (the search's budget), so it runs alone (RUN_SERIAL).
#include "models/transformer.h"
#include "test_util.h"

namespace mtf {
namespace {

// The paper's 4.9B LM on the 512-core pod: the search's choice is predicted
// at least as fast as the paper's layout, fits, and the search (with its
// simulations) takes at most 30 s.
TEST(AutoLayoutScaleTest, PaperTransformerOnThePod) {
  const models::TransformerConfig c = models::TransformerConfig::paper(262144, 256);
  models::TransformerLm lm(c);
  AutoLayoutOptions o;
  o.topology = Topology::preset("tpu-v2-512");
  const MeshShape mesh("batch:16;model:32");
  const AutoLayoutResult r = auto_layout(lm.graph(), mesh, {lm.loss}, lm.train_ops, o);
  // The 30 s budget holds on this machine; a sanitizer build runs ~3x slower.
  if (!testing::kAddressSanitizer) {
    EXPECT_LE(r.seconds, 30.0) << r.table();
  }
  ASSERT_TRUE(r.ranked[0].fits);
  ASSERT_TRUE(r.ranked[0].simulated);
  const LayoutRules paper("batch:batch;vocab:model;d_ff:model;heads:model");
  double paper_time = -1;
  for (const LayoutCandidate& cand : r.ranked)
    if (cand.simulated && cand.rules.to_string() == paper.to_string()) paper_time = cand.step_time;
  if (paper_time < 0) {
    MeshConfig cfg;
    cfg.mesh_shape = mesh;
    cfg.layout = paper;
    cfg.impl = MeshImpl::kSimulated;
    cfg.sim->topology = o.topology;
    cfg.sim->mode = SimMode::kCostOnly;
    Session s(lm.graph(), cfg);
    s.run({lm.loss}, {}, lm.train_ops);
    paper_time = s.simulation_report().step_time;
  }
  EXPECT_LE(r.ranked[0].step_time, paper_time * (1 + 1e-9)) << r.table();
}

}  // namespace
}  // namespace mtf
