// decode_benchmark — per-token latency of incremental decoding
// (models/transformer_decoder.h) of a Transformer LM with random weights
// (or, with --model transformer_encdec, of the encoder-decoder's decoder,
// models/encdec_decoder.h, and the time to encode a sentence):
// `--tokens` steps at positions cycling through the model's length (a step's
// attention reads every cache row, masked past its position), after
// `--warmup` untimed ones, at batch `--decode_batch`, on any mesh and layout
// (the mesh flags of the examples; under mtf-launch or mpirun every rank
// runs the same steps). For bench/compare_decode.py, which runs the same
// model decoding with a cache in PyTorch and alternates the two.
//
//   decode_benchmark --decode_batch 1 --tokens 128
//   decode_benchmark --mesh_shape model:2 --layout "heads:model;d_ff:model;vocab:model"
// Prints the OpenBLAS core and thread count, then "median_ms <x>" (per token);
// with --predict FILE (a machine from mtf-sim --calibrate), also
// "predicted_ms <x>": a step of the LM simulated on that machine
// (bench/sim_validation.py); with FILE,FILE,..., one figure per machine.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "kernels/gemm_bfloat16.h"
#include "models/encdec_decoder.h"
#include "models/transformer_decoder.h"
#include "predict.h"

using namespace mtf;

namespace {

// The model and its decoder: the LM's, or the encoder-decoder's (--layers
// in each stack, --length for sources and targets).
struct Decoding {
  std::shared_ptr<void> model;
  Graph* graph = nullptr;
  std::shared_ptr<models::IncrementalDecoder> decoder;
  models::EncDecDecoder* encdec_decoder = nullptr;  // or null for the LM
};

Decoding make_decoding(const std::string& model, const models::TransformerConfig& cfg,
                       int64_t batch) {
  Decoding d;
  if (model == "transformer") {
    auto lm = std::make_shared<models::TransformerLm>(cfg);
    d.decoder = std::make_shared<models::TransformerDecoder>(*lm, batch);
    d.graph = &lm->graph();
    d.model = lm;
    return d;
  }
  if (model != "transformer_encdec")
    throw ValueError("--model must be transformer or transformer_encdec, not \"" + model + "\"");
  models::EncDecConfig c = models::encdec_config_like(cfg);
  c.batch = 1;  // the training graph is not run
  auto m = std::make_shared<models::TransformerEncDec>(c);
  auto decoder = std::make_shared<models::EncDecDecoder>(*m, batch);
  d.encdec_decoder = decoder.get();
  d.decoder = decoder;
  d.graph = &m->graph();
  d.model = m;
  return d;
}

// One decoding step at position 1 simulated on `machine`: functional (the decoder reads the logits
// it returns), after an untimed step at 0. Its own model, so the real session's caches are not
// touched.
SimReport predicted_step(const std::string& model, const models::TransformerConfig& cfg,
                         int64_t batch, const MeshConfig& real, const Topology& machine) {
  const Decoding d = make_decoding(model, cfg, batch);
  if (d.encdec_decoder)
    throw ValueError("--predict simulates the LM's decoding only (--model transformer)");
  Session sim(*d.graph, bench::simulated_like(real, machine, SimMode::kFunctional));
  const std::vector<int32_t> ids(batch, 2);
  d.decoder->step(sim, ids, 0);
  d.decoder->step(sim, ids, 1);
  return sim.simulation_report();
}

}  // namespace

int main(int argc, char** argv) {
  return cli::run_example("decode_benchmark", [&] {
    cli::Flags flags;
    models::TransformerConfig defaults;
    defaults.layers = 6;
    defaults.d_model = 1024;
    defaults.d_ff = 4096;
    defaults.heads = 16;
    defaults.d_kv = 64;
    defaults.length = 128;
    defaults.batch = 1;
    models::define_transformer_flags(flags, defaults, /*with_vocab=*/true);
    flags.define("model", "transformer",
                 "transformer (the LM) or transformer_encdec (the encoder-decoder: --layers in "
                 "each stack, --length for sources and targets; also times encoding)");
    flags.define("decode_batch", "1", "sequences decoded together");
    flags.define("tokens", "128", "timed steps");
    flags.define("warmup", "8", "untimed steps first");
    flags.define("predict", "",
                 "a machine file (mtf-sim --calibrate): also print the LM's step simulated on "
                 "it; several, separated by commas: one figure each");
    cli::define_mesh_flags(flags);
    if (!flags.parse(argc, argv)) return 0;
    const models::TransformerConfig cfg =
        models::transformer_config_from_flags(flags, defaults, true);
    const int64_t batch = flags.i64("decode_batch");
    const int64_t tokens = flags.i64("tokens");
    if (batch < 1 || tokens < 1) throw ValueError("--decode_batch and --tokens must be >= 1");
    const std::vector<Topology> machines = bench::machines_to_predict(flags.str("predict"));
    std::string transport;
    const MeshConfig mesh = cli::mesh_config_from_flags(flags, &transport);
    const Decoding d = make_decoding(flags.str("model"), cfg, batch);
    const models::IncrementalDecoder& decoder = *d.decoder;
    models::EncDecDecoder* encdec_decoder = d.encdec_decoder;
    Session session(*d.graph, mesh);
    std::printf("%s\n", cli::describe_mesh(mesh, transport).c_str());
    std::mt19937 rng(1);
    std::vector<int32_t> ids(batch);
    // The encoder-decoder's sources: random ids, the length's last one 1.
    std::vector<double> encode_ms;
    auto encode = [&] {
      std::vector<std::vector<int32_t>> sources(batch);
      for (auto& s : sources) {
        for (int64_t i = 0; i + 1 < cfg.length; ++i)
          s.push_back(3 + static_cast<int32_t>(rng() % (cfg.vocab - 3)));
        s.push_back(1);
      }
      const auto t0 = std::chrono::steady_clock::now();
      encdec_decoder->encode(session, sources);
      encode_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    };
    if (encdec_decoder) encode();
    int64_t p = 0;
    const int64_t positions = decoder.length() - (encdec_decoder ? 1 : 0);
    auto step = [&] {
      for (int32_t& t : ids) t = static_cast<int32_t>(rng() % cfg.vocab);
      decoder.step(session, ids, p);
      p = (p + 1) % positions;
    };
    for (int64_t i = 0; i < flags.i64("warmup"); ++i) step();
    session.reset_profile();
    std::vector<double> ms;
    for (int64_t i = 0; i < tokens; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (encdec_decoder && p == 0) encode();  // a new sentence
    }
    if (mesh.profile) std::printf("%s", session.profile().to_string(20).c_str());
    std::printf("openblas_core %s threads %d\n", openblas_get_corename(),
                openblas_get_num_threads());
    std::printf("bfloat16_gemm %s\n", kernels::bfloat16_gemm_description());
    if (!encode_ms.empty()) {
      std::sort(encode_ms.begin(), encode_ms.end());
      std::printf("encode_median_ms %.4f (%zu sentences)\n", encode_ms[encode_ms.size() / 2],
                  encode_ms.size());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("median_ms %.4f\n", ms[ms.size() / 2]);
    if (!machines.empty() && (!mesh.process_transport || mesh.process_transport->rank() == 0)) {
      const Profile profile = session.profile();
      bench::print_predictions(
          machines,
          [&](const Topology& m) {
            return predicted_step(flags.str("model"), cfg, batch, mesh, m);
          },
          mesh.profile ? &profile : nullptr, 12, 4);
    }
    return 0;
  });
}
