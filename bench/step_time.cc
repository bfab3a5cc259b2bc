// step_time — median wall time of one training step of the Transformer LM,
// the sequence-to-sequence Transformer, the Fashion-MNIST MLP or the
// Fashion-MNIST CNN on one processor, for bench/compare_pytorch.py,
// which runs the same models in PyTorch and alternates the two. Inputs are random (timing does not
// depend on them); the OpenBLAS core and thread count in force are printed so both sides can be
// checked to run under one setting.
//
//   step_time --model transformer --d_model 512 --d_ff 2048 --heads 8 --d_kv 64
//             --batch 8 --length 128 --steps 10 --warmup 3
//   step_time --model mlp --batch 100 --reproducible true
//   step_time --model cnn --batch 100
// Prints "median_ms <x>" (and the per-step times) on its last lines; with
// --fma_peak true, also this core's measured FMA peak (fma_peak.h); with
// --predict FILE[,FILE...], "predicted_ms <x> ...", the step simulated on
// each machine file.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>

#include "cli/dtype_flags.h"
#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "fma_peak.h"
#include "kernels/gemm_bfloat16.h"
#include "models/cnn.h"
#include "models/mlp.h"
#include "models/transformer.h"
#include "models/transformer_encdec.h"
#include "predict.h"
#include "rss.h"

using namespace mtf;

namespace {

// The step simulated on the machine in `machine_file` (predict.h).
SimReport predicted_step(Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
                         const MeshConfig& real, const Topology& machine) {
  Session sim(graph, bench::simulated_like(real, machine, SimMode::kCostOnly));
  sim.run({loss}, {}, train);
  return sim.simulation_report();
}

// The run's environment, memory and times, one "key values" line each.
void print_results(std::vector<double> ms, double rss_before, bool fma_peak) {
  std::printf("openblas_core %s threads %d\n", openblas_get_corename(), openblas_get_num_threads());
  std::printf("bfloat16_gemm %s\n", kernels::bfloat16_gemm_description());
  // What the steps added to the process at their peak: variables and
  // optimizer slots made by the first run, activations, buffers kept for
  // reuse.
  const double rss_peak = bench::status_mib("VmHWM");
  std::printf("peak_rss_mib %.1f steps_added_mib %.1f\n", rss_peak, rss_peak - rss_before);
  if (fma_peak) std::printf("fma_peak_gflops %.1f\n", bench::fma_peak_gflops());
  std::printf("steps_ms");
  for (double m : ms) std::printf(" %.3f", m);
  std::sort(ms.begin(), ms.end());
  std::printf("\nmedian_ms %.3f\n", ms.empty() ? 0.0 : ms[ms.size() / 2]);
}

// A model set up for timing: its session, one training step on random
// data, and the graph's loss and update (for --print_program and --predict).
struct Timed {
  std::shared_ptr<void> model;
  std::unique_ptr<Session> session;
  std::function<void()> step;
  Graph* graph = nullptr;
  Tensor loss;
  const std::vector<Operation*>* train = nullptr;
};

// Random int32 ids in [low, vocab) of `shape`.
HostTensor random_ids(const Shape& shape, int64_t low, int64_t vocab, std::mt19937& rng) {
  HostTensor t(shape, int32);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<int32_t>()[i] = static_cast<int32_t>(low + static_cast<int64_t>(rng() % (vocab - low)));
  return t;
}

// Random images in [0, 1] and labels of 10 classes.
std::pair<HostTensor, HostTensor> random_images(const Shape& images, const Shape& labels,
                                                std::mt19937& rng) {
  HostTensor in(images, float32), tg(labels, int32);
  for (int64_t i = 0; i < in.num_elements(); ++i) in.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < tg.num_elements(); ++i)
    tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  return {in, tg};
}

template <typename M>
Timed timed(std::shared_ptr<M> m, const MeshConfig& mc) {
  Timed t;
  t.session = std::make_unique<Session>(m->graph(), mc);
  t.graph = &m->graph();
  t.loss = m->loss;
  t.train = &m->train_ops;
  t.model = std::move(m);
  return t;
}

Timed timed_model(const cli::Flags& flags, const models::TransformerConfig& defaults,
                  const MeshConfig& mc) {
  const std::string model = flags.str("model");
  std::mt19937 rng(1);
  if (model == "transformer") {
    const models::TransformerConfig cfg =
        models::transformer_config_from_flags(flags, defaults, true);
    auto lm = std::make_shared<models::TransformerLm>(cfg);
    Timed t = timed(lm, mc);
    const Feeds feeds = {{lm->inputs, random_ids(lm->inputs.shape(), 0, cfg.vocab, rng)},
                         {lm->targets, random_ids(lm->targets.shape(), 0, cfg.vocab, rng)}};
    t.step = [s = t.session.get(), lm, feeds] { s->run({lm->loss}, feeds, lm->train_ops); };
    return t;
  }
  if (model == "transformer_encdec") {
    // The sequence-to-sequence Transformer: --layers in each stack,
    // --length for sources and targets, rows of random ids without
    // padding (examples/translate's other defaults: RMS norm, ReLU,
    // relative positions, dropout and label smoothing 0.1).
    const models::TransformerConfig lm =
        models::transformer_config_from_flags(flags, defaults, true);
    const models::EncDecConfig cfg = models::encdec_config_like(lm);
    auto m = std::make_shared<models::TransformerEncDec>(cfg);
    Timed t = timed(m, mc);
    const Feeds feeds = m->feeds(random_ids(m->inputs.shape(), 3, cfg.vocab, rng),
                                 random_ids(m->targets.shape(), 3, cfg.vocab, rng));
    t.step = [s = t.session.get(), m, feeds] { s->run({m->loss}, feeds, m->train_ops); };
    return t;
  }
  if (model == "mlp") {
    models::MlpConfig cfg;
    cfg.batch_size = flags.i64("batch");
    cfg.hidden = flags.i64("hidden");
    cfg.variable_dtype = cli::variable_dtype_from_flags(flags);
    auto m = std::make_shared<models::Mlp>(cfg);
    Timed t = timed(m, mc);
    auto [in, tg] = random_images(m->images.shape(), m->labels.shape(), rng);
    t.step = [s = t.session.get(), m, in = in, tg = tg] { m->train_step(*s, in, tg); };
    return t;
  }
  if (model == "cnn") {
    models::CnnConfig cfg;
    cfg.batch_size = flags.i64("batch");
    cfg.variable_dtype = cli::variable_dtype_from_flags(flags);
    auto m = std::make_shared<models::Cnn>(cfg);
    Timed t = timed(m, mc);
    auto [in, tg] = random_images(m->images.shape(), m->labels.shape(), rng);
    t.step = [s = t.session.get(), m, in = in, tg = tg] { m->train_step(*s, in, tg); };
    return t;
  }
  throw ValueError("--model must be transformer, transformer_encdec, mlp or cnn, not \"" + model +
                   "\"");
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_example("step_time", [&] {
    cli::Flags flags;
    flags.define("model", "transformer", "transformer, transformer_encdec, mlp or cnn");
    models::TransformerConfig defaults;
    models::define_transformer_flags(flags, defaults, /*with_vocab=*/true);
    flags.define("hidden", "1024", "mlp: hidden units");
    flags.define("steps", "10", "timed steps");
    flags.define("warmup", "3", "untimed steps first");
    cli::define_mesh_flags(flags);
    flags.define("predict", "",
                 "also simulate the step on this machine file (mtf-sim --calibrate's, its devices "
                 "the mesh's ranks) and print predicted_ms; several, separated by commas: one "
                 "figure each (--profile compares with the first); under mtf-launch, rank 0 only");
    flags.define("profile_ops", "15", "ops listed by the profile");
    flags.define("print_program", "false", "print the lowered training step first");
    flags.define("fma_peak", "false",
                 "also measure this core's float32 FMA peak (prints fma_peak_gflops)");
    if (!flags.parse(argc, argv)) return 0;
    std::string transport_name;
    const MeshConfig mc = cli::mesh_config_from_flags(flags, &transport_name);
    // Checked before any step runs.
    const std::vector<Topology> machines = bench::machines_to_predict(flags.str("predict"));
    Timed t = timed_model(flags, defaults, mc);
    if (flags.str("print_program") == "true")
      std::printf("%s", t.session->program_text({t.loss}, *t.train).c_str());
    bench::reset_peak_rss();
    const double rss_before = bench::status_mib("VmRSS");
    for (int64_t i = 0; i < flags.i64("warmup"); ++i) t.step();
    t.session->reset_profile();
    std::vector<double> ms;
    for (int64_t i = 0; i < flags.i64("steps"); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      t.step();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (mc.profile)
      std::printf(
          "%s", t.session->profile().to_string(static_cast<int>(flags.i64("profile_ops"))).c_str());
    print_results(ms, rss_before, flags.str("fma_peak") == "true");
    if (!machines.empty() && (!mc.process_transport || mc.process_transport->rank() == 0)) {
      const Profile profile = t.session->profile();
      bench::print_predictions(
          machines,
          [&](const Topology& m) { return predicted_step(*t.graph, t.loss, *t.train, mc, m); },
          mc.profile ? &profile : nullptr, static_cast<size_t>(flags.i64("profile_ops")), 3);
    }
    return 0;
  });
}
