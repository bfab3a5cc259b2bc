// Meshes in process:
// - allreduce of 4 KiB .. 64 MiB float32 over 2, 4 and 8 ranks (threads),
//   time and algorithm bandwidth (bytes / time), next to memcpy of the same
//   bytes in the same run;
// - one MLP training step at batch 1000 on a one-processor mesh against the
//   same step on 2- and 4-core data-parallel meshes (same global batch),
//   paired: the ratio is the extra time a mesh costs (slicing, collectives,
//   scheduling) over the same compute, with the Session's default execution
//   (cores as fibers on one thread per CPU). Target: <= 15% overhead.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "models/mlp.h"
#include "mtf/collectives.h"
#include "mtf/in_process_transport.h"
#include "paired.h"

namespace {

using namespace mtf;
using Clock = std::chrono::steady_clock;

void BM_Allreduce(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const int64_t count = bytes / 4;
  // Enough repetitions to time small messages, capped so a run stays short.
  const int reps = static_cast<int>(std::clamp<int64_t>((int64_t{16} << 20) / bytes, 2, 100));
  for (auto _ : state) {
    double seconds = 0;
    run_in_process(
        ranks,
        [&](Transport& t) {
          std::vector<float> data(count, 1.0f);
          const Group g = Group::all(t.size(), t.rank());
          barrier(t, g, 1);
          const auto start = Clock::now();
          for (int r = 0; r < reps; ++r)
            allreduce(t, g, data.data(), count, float32, ReduceOp::kSum, 2 + r);
          barrier(t, g, 1000000);
          if (t.rank() == 0) seconds = std::chrono::duration<double>(Clock::now() - start).count();
        },
        RankExecution::kPool);
    state.SetIterationTime(seconds / reps);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["algbw_GB/s"] = benchmark::Counter(static_cast<double>(bytes) * 1e-9,
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Memcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  std::vector<char> a(bytes, 1), b(bytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_MlpStepMeshVsOneCore(benchmark::State& state) {
  const int cores = static_cast<int>(state.range(0));
  const int64_t batch = state.range(1);
  models::MlpConfig config;
  config.batch_size = batch;
  models::Mlp one(config), meshed(config);
  Session s1(one.graph());
  MeshConfig mc;
  mc.mesh_shape = MeshShape("all:" + std::to_string(cores));
  mc.layout = LayoutRules("batch:all");
  Session sm(meshed.graph(), mc);
  std::mt19937 rng(1);
  HostTensor images(one.images.shape(), float32), labels(one.labels.shape(), int32);
  for (int64_t i = 0; i < images.num_elements(); ++i)
    images.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  auto single = [&] { benchmark::DoNotOptimize(one.train_step(s1, images, labels)); };
  auto mesh = [&] { benchmark::DoNotOptimize(meshed.train_step(sm, images, labels)); };
  // ratio = one-core time / mesh time: 1.0 is no overhead, 0.87 is 15%.
  // Turns of 4 steps: a training loop runs its steps back to back.
  mtf::bench::run_paired(state, single, mesh, 1.0, "steps/s", 4);
}

}  // namespace

int main(int argc, char** argv) {
  for (int64_t bytes :
       {int64_t{4} << 10, int64_t{256} << 10, int64_t{4} << 20, int64_t{64} << 20}) {
    for (int ranks : {2, 4, 8})
      benchmark::RegisterBenchmark("allreduce", BM_Allreduce)
          ->Args({ranks, bytes})
          ->UseManualTime()
          ->Iterations(3);
    benchmark::RegisterBenchmark("memcpy", BM_Memcpy)->Arg(bytes);
  }
  // Batch 1000: the overhead target; batch 200: small steps, where what a
  // run costs beyond its steps (starting the ranks) shows.
  for (int64_t batch : {1000, 200}) {
    benchmark::RegisterBenchmark(
        ("mlp_step_batch" + std::to_string(batch) + "_dp_vs_one_core").c_str(),
        BM_MlpStepMeshVsOneCore)
        ->Args({2, batch})
        ->Args({4, batch})
        ->MinTime(3.0);
  }
  return mtf::bench::run_with_summary(
      argc, argv,
      "MLP step at batch 1000: one-core time / data-parallel mesh time, paired (1.0 = no\n"
      "overhead; target >= 0.87, i.e. <= 15% overhead):");
}
