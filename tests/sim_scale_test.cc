// The simulator at pod scale: MLP training steps on tpu-v2-512 (512 cores as
// fibers) in functional mode, data-parallel and hybrid, and cost-only. Runs
// as its own executable so the peak RSS it prints is its own. The wall-time
// and memory targets are checked by bench/sim_benchmark; here the runs must
// work, agree between modes, and report sane figures.
#include <sys/resource.h>

#include <chrono>
#include <random>

#include "models/mlp.h"
#include "test_util.h"

namespace mtf {
namespace {

struct ScaleRun {
  SimReport report;
  double wall_seconds = 0;
  float loss = 0;
};

ScaleRun run_mlp(const char* mesh, const char* layout, SimMode mode, int64_t batch) {
  models::MlpConfig mc;
  mc.batch_size = batch;
  mc.hidden = 1024;
  models::Mlp mlp(mc);
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->topology = Topology::preset("tpu-v2-512");
  c.sim->mode = mode;
  Session s(mlp.graph(), c);
  Feeds feeds;
  if (mode == SimMode::kFunctional) {
    std::mt19937 rng(5);
    HostTensor x(mlp.images.shape(), float32);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = (rng() % 256) / 255.0f;
    HostTensor y(mlp.labels.shape(), int32);
    for (int64_t i = 0; i < y.num_elements(); ++i) y.data<int32_t>()[i] = rng() % 10;
    feeds = {{mlp.images, x}, {mlp.labels, y}};
  }
  ScaleRun r;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<HostTensor> out = s.run({mlp.loss}, feeds, mlp.train_ops);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (out[0].valid()) r.loss = out[0].data<float>()[0];
  r.report = s.simulation_report();
  return r;
}

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);
}

void check(const ScaleRun& r, const char* what) {
  std::printf("%s: simulated step %.3f ms, wall %.2f s, peak RSS so far %.2f GiB, %lld messages\n",
              what, r.report.step_time * 1e3, r.wall_seconds, peak_rss_gib(),
              static_cast<long long>(r.report.messages));
  EXPECT_EQ(r.report.cores, 512);
  EXPECT_GT(r.report.step_time, 0);
  EXPECT_GT(r.report.messages, 0);
  for (const auto& ring : r.report.rings) EXPECT_EQ(ring.max_hops, 1) << what << " " << ring.axis;
}

TEST(SimScale, HybridMlpOn512CoresFunctionalAndCostOnlyAgree) {
  const ScaleRun f =
      run_mlp("batch:16;model:32", "batch:batch;hidden:model", SimMode::kFunctional, 512);
  check(f, "hybrid functional");
  EXPECT_TRUE(std::isfinite(f.loss));
  EXPECT_GT(f.loss, 1.0f);  // about ln(10) at initialisation
  const ScaleRun c =
      run_mlp("batch:16;model:32", "batch:batch;hidden:model", SimMode::kCostOnly, 512);
  check(c, "hybrid cost-only");
  EXPECT_EQ(c.report.step_time, f.report.step_time);
  EXPECT_EQ(c.report.messages, f.report.messages);
}

TEST(SimScale, DataParallelMlpOn512CoresFunctional) {
  if (testing::kAddressSanitizer)
    GTEST_SKIP() << "512 replicas of the weights under ASan exceed the CI machine's budget";
  const ScaleRun f = run_mlp("all:512", "batch:all", SimMode::kFunctional, 512);
  check(f, "data-parallel functional");
  EXPECT_TRUE(std::isfinite(f.loss));
}

}  // namespace
}  // namespace mtf
