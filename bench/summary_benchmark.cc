// What summaries cost a training step: the default Transformer LM
// (examples/transformer_lm's sizes) stepping as the example does without
// --summary_dir (fetching the loss), against the same with --summary_dir and
// --metrics_jsonl (fetching the gradient norm too, and writing one event and
// one JSON line through cli::TrainingReport), paired step by step in the
// same run. "ratio" is the plain step's time over the summarised step's
// (target: >= 0.99, summaries cost at most 1%). The "norm_only" row fetches
// the norm without writing, to split the cost between the two.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "cli/training_report.h"
#include "models/transformer.h"
#include "paired.h"

namespace {

using namespace mtf;

void BM_Summaries(benchmark::State& state) {
  const bool write = state.range(0) != 0;
  models::TransformerLm lm(models::TransformerConfig{});
  Session session(lm.graph());
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    in.data<int32_t>()[i] = static_cast<int32_t>(rng() % 256);
    tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % 256);
  }
  const std::string dir = std::filesystem::temp_directory_path().string() + "/mtf_summary_bench_" +
                          std::to_string(::getpid());
  cli::Flags flags;
  cli::define_report_flags(flags);
  std::string tb = "--summary_dir=" + dir + "/tb", jsonl = "--metrics_jsonl=" + dir + "/m.jsonl";
  const char* argv[] = {"summary_benchmark", tb.c_str(), jsonl.c_str(), "--progress_every=0"};
  flags.parse(write ? 4 : 2, const_cast<char**>(argv));
  cli::TrainingReport report(flags, MeshConfig(), "tokens", 1 << 30);
  const std::vector<Tensor> with_norm{lm.loss, lm.gradient_norm};
  report.set_flops_per_step(session.flops_per_run(with_norm, lm.train_ops));
  int64_t step = 0;
  auto plain = [&] {
    benchmark::DoNotOptimize(
        session.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops));
  };
  auto summarised = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = session.run(with_norm, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops);
    cli::TrainingReport::Step f;
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.loss = out[0].data<float>()[0];
    f.learning_rate = 0.03;
    f.gradient_norm = out[1].data<float>()[0];
    f.items = static_cast<double>(lm.inputs.shape().num_elements());
    report.step(++step, f);
  };
  const double flops = session.flops_per_run({lm.loss}, lm.train_ops);
  mtf::bench::run_paired(state, plain, summarised, flops, "GFLOP/s", 4);
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("summaries_lm_default", BM_Summaries)
      ->Arg(1)
      ->MinTime(5.0)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("summaries_lm_default_norm_only", BM_Summaries)
      ->Arg(0)
      ->MinTime(5.0)
      ->Unit(benchmark::kMillisecond);
  return mtf::bench::run_with_summary(
      argc, argv,
      "The default Transformer LM's step without summaries over the step with them (gradient\n"
      "norm fetched, an event and a JSON line written), paired in the same run (target: >= 0.99):");
}
