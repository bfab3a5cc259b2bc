// examples/transformer_lm: trains the paper's decoder-only Transformer LM,
// byte-level, on the text the `fortunes` package ships, on any mesh and
// layout; prints training and held-out loss, bits per byte against a
// byte-frequency baseline, and samples text from the trained model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "models/corpus.h"
#include "models/transformer.h"

namespace {

using namespace mtf;

// Mean held-out loss (nats per byte) over the first `batches` batches.
double heldout_loss(Session& session, examples::TransformerLm& lm, const std::string& text,
                    int64_t batches) {
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  double sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    examples::window_batch(text, i, in, tg);
    sum += session.run(lm.eval_loss, {{lm.inputs, in}, {lm.targets, tg}}).data<float>()[0];
  }
  return sum / static_cast<double>(batches);
}

// Extends `prompt` by `n` bytes sampled at `temperature` (0: most likely),
// one forward pass per byte over the last `length` bytes.
std::string sample(Session& session, examples::TransformerLm& lm, std::string text, int64_t n,
                   double temperature, uint64_t seed) {
  const int64_t length = lm.length.size, batch = lm.batch.size, vocab = lm.vocab.size;
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::fill(tg.data<int32_t>(), tg.data<int32_t>() + tg.num_elements(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t used = std::min<int64_t>(length, static_cast<int64_t>(text.size()));
    const std::string ctx = text.substr(text.size() - used);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < length; ++i)
        in.data<int32_t>()[b * length + i] =
            i < used ? static_cast<unsigned char>(ctx[i]) : static_cast<int32_t>(' ');
    const HostTensor logits = session.run(lm.eval_logits, {{lm.inputs, in}, {lm.targets, tg}});
    const float* row = logits.data<float>() + (used - 1) * vocab;  // batch row 0
    int best = 0;
    for (int v = 1; v < vocab; ++v)
      if (row[v] > row[best]) best = v;
    int next = best;
    if (temperature > 0) {
      std::vector<double> p(vocab);
      double z = 0;
      for (int v = 0; v < vocab; ++v) z += (p[v] = std::exp((row[v] - row[best]) / temperature));
      double u = std::uniform_real_distribution<double>(0, z)(rng);
      for (next = 0; next < vocab - 1 && (u -= p[next]) > 0; ++next) {
      }
    }
    text.push_back(static_cast<char>(next));
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  return mtf::data::run_example("transformer_lm", [&]() -> int {
    data::Flags flags;
    flags.define("data_dir", "/usr/share/games/fortunes", "directory of text files");
    examples::define_transformer_flags(flags, examples::TransformerConfig(), false);
    flags.define("dropout", "0", "dropout rate during training");
    flags.define("z_loss", "1e-4", "weight of the z-loss (logsumexp^2)");
    flags.define("lr", "0.03",
                 "Adafactor learning rate, relative to each parameter's RMS (0: its default "
                 "schedule min(0.01, 1/sqrt(step)))");
    flags.define("steps", "300", "training steps");
    flags.define("eval_every", "100", "print losses every this many steps");
    flags.define("eval_batches", "8", "held-out batches per evaluation");
    flags.define("seed", "1", "seed for initialisation and data order");
    flags.define("sample_bytes", "160", "bytes of text to sample after training (0: none)");
    flags.define("prompt", "The ", "text the sample starts from");
    flags.define("temperature", "0.7", "sampling temperature (0: most likely byte)");
    flags.define("loss_digits", "6", "significant digits of printed losses (17: exact)");
    data::define_mesh_flags(flags);
    if (!flags.parse(argc, argv)) return 0;

    examples::TransformerConfig cfg =
        examples::transformer_config_from_flags(flags, examples::TransformerConfig(), false);
    cfg.dropout = static_cast<float>(flags.f64("dropout"));
    cfg.z_loss = static_cast<float>(flags.f64("z_loss"));
    cfg.learning_rate = static_cast<float>(flags.f64("lr"));
    cfg.seed = static_cast<uint64_t>(flags.i64("seed"));
    const int64_t steps = flags.i64("steps");
    const int64_t eval_every = std::max<int64_t>(1, flags.i64("eval_every"));
    const int64_t sample_bytes = flags.i64("sample_bytes");
    const double temperature = flags.f64("temperature");
    const int digits = static_cast<int>(std::clamp<int64_t>(flags.i64("loss_digits"), 1, 17));
    if (steps < 0) throw ValueError("--steps must be >= 0");
    if (sample_bytes < 0) throw ValueError("--sample_bytes must be >= 0");
    if (temperature < 0) throw ValueError("--temperature must be >= 0");

    const examples::Corpus corpus = examples::load_text_corpus(flags.str("data_dir"));
    const int64_t eval_batches = std::min(
        flags.i64("eval_batches"), examples::window_batches(corpus.heldout, cfg.batch, cfg.length));
    if (eval_batches < 1) {
      throw ValueError("the held-out text holds no batch of --batch windows of --length bytes");
    }
    const double baseline = examples::unigram_bits_per_byte(
        corpus.train, corpus.heldout.substr(0, eval_batches * cfg.batch * cfg.length + 1));
    std::printf("data: %zu files from %s, %zu training and %zu held-out bytes\n",
                corpus.files.size(), flags.str("data_dir").c_str(), corpus.train.size(),
                corpus.heldout.size());

    std::string transport_name;
    MeshConfig mesh = data::mesh_config_from_flags(flags, &transport_name);
    examples::TransformerLm lm(cfg);
    data::resolve_auto_layout(flags, mesh, lm.graph(), {lm.loss}, lm.train_ops);
    Session session(lm.graph(), mesh);
    std::printf(
        "model: %lld layers, d_model %lld, d_ff %lld, %lld heads of %lld, %lld parameters\n",
        static_cast<long long>(cfg.layers), static_cast<long long>(cfg.d_model),
        static_cast<long long>(cfg.d_ff), static_cast<long long>(cfg.heads),
        static_cast<long long>(cfg.d_kv), static_cast<long long>(cfg.num_parameters()));
    std::printf("%s\n", data::describe_mesh(mesh, transport_name).c_str());
    // Lowering the training step checks every tensor's layout before training.
    session.counters_text({lm.loss}, lm.train_ops);
    std::printf("byte-frequency baseline: %.4f bits per byte on the held-out text\n", baseline);

    examples::WindowSampler sampler(corpus.train, cfg.batch, cfg.length, cfg.seed);
    HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
    double interval = 0;
    int64_t interval_steps = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= steps; ++step) {
      sampler.next(in, tg);
      const auto out = session.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops);
      interval += out[0].data<float>()[0];
      ++interval_steps;
      if (step == 1 || step % eval_every == 0 || step == steps) {
        const double held = heldout_loss(session, lm, corpus.heldout, eval_batches);
        std::printf("step %lld loss %.*g held-out loss %.*g bits/byte %.4f\n",
                    static_cast<long long>(step), digits,
                    interval / static_cast<double>(interval_steps), digits, held,
                    held / std::log(2.0));
        std::fflush(stdout);
        interval = 0;
        interval_steps = 0;
      }
      if (step == 1) session.reset_profile();  // the first step warms caches up
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("trained %lld steps in %.1f s (%.1f ms/step)\n", static_cast<long long>(steps),
                secs, steps ? 1000.0 * secs / static_cast<double>(steps) : 0.0);
    if (mesh.profile) std::printf("%s", session.profile().to_string().c_str());
    if (sample_bytes > 0) {
      const std::string text =
          sample(session, lm, flags.str("prompt"), sample_bytes, temperature, cfg.seed);
      std::printf("sample:\n%s\n", text.c_str());
    }
    return 0;
  });
}
