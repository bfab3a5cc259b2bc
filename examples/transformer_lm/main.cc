// examples/transformer_lm: trains the paper's decoder-only Transformer LM,
// byte-level, on the text the `fortunes` package ships, on any mesh and
// layout; prints training and held-out loss, bits per byte against a
// byte-frequency baseline, and samples text from the trained model with the
// cached decoder. With --checkpoint_dir it saves checkpoints and resumes from
// the latest; --generate true loads the latest and only generates, on any
// mesh and layout (sampling, or beam search with --beams).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli/checkpoint_flags.h"
#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "cli/training_report.h"
#include "models/corpus.h"
#include "models/text_generation.h"
#include "models/transformer.h"

namespace {

using namespace mtf;

// Mean held-out loss (nats per byte) over the first `batches` batches.
double heldout_loss(Session& session, models::TransformerLm& lm, const std::string& text,
                    int64_t batches) {
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  double sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    models::window_batch(text, i, in, tg);
    sum += session.run(lm.eval_loss, {{lm.inputs, in}, {lm.targets, tg}}).data<float>()[0];
  }
  return sum / static_cast<double>(batches);
}

// Copies rows [first, first + part.rows) of `whole` into `part` (int32).
void copy_rows(const HostTensor& whole, int64_t first, HostTensor& part) {
  const int64_t width = whole.shape()[1].size;
  std::copy_n(whole.data<int32_t>() + first * width, part.num_elements(), part.data<int32_t>());
}

// One training step on the batch the sampler draws next: the batch (or
// this process's rows of it, from `first_row`, into in/tg) in one run, or
// with microbatches its equal parts in turn (in/tg hold the whole batch)
// and then the update. Returns the mean loss and the gradient norm (NaN
// unless fetched).
std::pair<double, double> train_step(Session& session, models::TransformerLm& lm,
                                     models::WindowSampler& sampler, HostTensor& in, HostTensor& tg,
                                     int64_t first_row, bool fetch_norm) {
  const int64_t parts = lm.config().microbatches;
  if (parts == 1) {
    sampler.next_rows(in, tg, first_row);
    std::vector<Tensor> fetches{lm.loss};
    if (fetch_norm) fetches.push_back(lm.gradient_norm);
    const auto out = session.run(fetches, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops);
    return {out[0].data<float>()[0], fetch_norm ? out[1].data<float>()[0] : NAN};
  }
  sampler.next(in, tg);
  HostTensor part_in(lm.inputs.shape(), int32), part_tg(lm.targets.shape(), int32);
  double loss = 0;
  for (int64_t k = 0; k < parts; ++k) {
    copy_rows(in, k * lm.batch.size, part_in);
    copy_rows(tg, k * lm.batch.size, part_tg);
    loss += session.run({lm.loss}, {{lm.inputs, part_in}, {lm.targets, part_tg}}, lm.train_ops)[0]
                .data<float>()[0];
  }
  double norm = NAN;
  if (fetch_norm) {
    norm = session.run({lm.gradient_norm}, {}, lm.apply_ops)[0].data<float>()[0];
  } else {
    session.run({}, {}, lm.apply_ops);
  }
  return {loss / static_cast<double>(parts), norm};
}

// A mixture-of-experts LM has no cached decoder (expert capacity is per
// sequence): it extends `text` by `n` bytes with one forward pass of the
// evaluation graph per byte over the last `length` bytes.
std::string sample_by_recomputation(Session& session, models::TransformerLm& lm, std::string text,
                                    int64_t n, const models::SamplingOptions& options) {
  const int64_t length = lm.length.size, batch = lm.batch.size, vocab = lm.vocab.size;
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::fill(tg.data<int32_t>(), tg.data<int32_t>() + tg.num_elements(), 0);
  std::mt19937_64 rng(options.seed);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t used = std::min<int64_t>(length, static_cast<int64_t>(text.size()));
    const std::string ctx = text.substr(text.size() - used);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < length; ++i)
        in.data<int32_t>()[b * length + i] =
            i < used ? static_cast<unsigned char>(ctx[i]) : static_cast<int32_t>(' ');
    const HostTensor logits = session.run(lm.eval_logits, {{lm.inputs, in}, {lm.targets, tg}});
    const int32_t next =
        models::choose_next(logits.data<float>() + (used - 1) * vocab, vocab, options, rng);
    text.push_back(static_cast<char>(next));
    if (next == options.stop) break;
  }
  return text;
}

// The model's sizes, kept in its checkpoints so that --generate rebuilds it.
std::map<std::string, std::string> config_metadata(const models::TransformerConfig& c) {
  return {{"layers", std::to_string(c.layers)},
          {"d_model", std::to_string(c.d_model)},
          {"d_ff", std::to_string(c.d_ff)},
          {"heads", std::to_string(c.heads)},
          {"d_kv", std::to_string(c.d_kv)},
          {"vocab", std::to_string(c.vocab)},
          {"length", std::to_string(c.length)},
          {"batch", std::to_string(c.batch)},
          {"moe_experts", std::to_string(c.moe_experts)}};
}

models::TransformerConfig config_of(const CheckpointInfo& info, models::TransformerConfig c) {
  auto get = [&](const char* key) {
    auto it = info.metadata.find(key);
    if (it == info.metadata.end()) {
      throw ValueError("checkpoint " + info.path + " has no \"" + key +
                       "\" entry: it was not written by transformer_lm; point "
                       "--checkpoint_dir at a directory this example trained into");
    }
    return std::stoll(it->second);
  };
  c.layers = get("layers");
  c.d_model = get("d_model");
  c.d_ff = get("d_ff");
  c.heads = get("heads");
  c.d_kv = get("d_kv");
  c.vocab = get("vocab");
  c.length = get("length");
  c.batch = get("batch");
  c.moe_experts = get("moe_experts");
  return c;
}

// The cached decoder for the sample, made before the Session (which
// creates the variables, the decoder's caches among them); none for a
// mixture-of-experts LM or when nothing is generated.
// Its sequences (one, or one per beam) are split like the training batch
// where the mesh splits that evenly, and kept whole otherwise.
std::unique_ptr<models::TransformerDecoder> make_decoder(models::TransformerLm& lm,
                                                         const MeshConfig& mesh,
                                                         int64_t sample_bytes,
                                                         const models::GenerationOptions& options) {
  if (lm.config().moe_experts > 0) {
    if (options.beams >= 2) throw ValueError("--beams needs a dense LM (no --moe_experts)");
    return nullptr;
  }
  if (sample_bytes == 0) return nullptr;
  const int64_t sequences = std::max<int64_t>(1, options.beams);
  const auto axis = mesh.layout.mesh_axis_for("batch", mesh.mesh_shape);
  const bool even = !axis || sequences % mesh.mesh_shape.dims()[*axis].size == 0;
  return std::make_unique<models::TransformerDecoder>(lm, sequences, even ? "batch" : "sequences");
}

// Every variable of the session but the decoder's caches: what a
// checkpoint of the model must hold.
std::vector<std::string> model_variables(const Session& session,
                                         const models::TransformerDecoder* decoder) {
  std::vector<std::string> names;
  for (const std::string& name : session.variable_names()) {
    bool cache = false;
    if (decoder)
      for (const Tensor& c : decoder->caches()) cache = cache || c.op().name() == name;
    if (!cache && !is_accumulation_buffer(name)) names.push_back(name);
  }
  return names;
}

// The sample after `prompt`: the cached decoder (a dense LM), or one forward
// pass per byte (mixture of experts); prints it and its time per byte.
void print_sample(Session& session, models::TransformerLm& lm,
                  const models::TransformerDecoder* decoder, const std::string& prompt,
                  int64_t bytes, const models::GenerationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::string text =
      decoder ? models::continue_text(*decoder, session, prompt, bytes, options)
              : sample_by_recomputation(session, lm, prompt, bytes, options.sampling);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t added = text.size() - prompt.size();
  std::printf("sample:\n%s\n", text.c_str());
  std::printf("generated %zu bytes in %.3f s (%.2f ms per byte)\n", added, secs,
              added ? 1000.0 * secs / static_cast<double>(added) : 0.0);
}

// The example's flags.
void define_flags(cli::Flags& flags) {
  flags.define("data_dir", "/usr/share/games/fortunes", "directory of text files");
  models::define_transformer_flags(flags, models::TransformerConfig(), false);
  flags.define("dropout", "0", "dropout rate during training");
  flags.define("z_loss", "1e-4", "weight of the z-loss (logsumexp^2)");
  flags.define("lr", "0.03",
               "Adafactor learning rate, relative to each parameter's RMS: a number or a "
               "schedule such as \"0.03*warmup(50)\" (docs/training.md; 0: Adafactor's "
               "own, min(0.01, 1/sqrt(step)))");
  flags.define("clip_norm", "0",
               "clip the gradients to this global norm before each update (0: no clipping)");
  flags.define("microbatches", "1",
               "train each step's --batch as this many equal parts, their gradients "
               "accumulated, then one update (less activation memory)");
  flags.define("steps", "300", "training steps");
  flags.define("eval_every", "100", "print losses every this many steps");
  flags.define("eval_batches", "8", "held-out batches per evaluation");
  flags.define("seed", "1", "seed for initialisation, data order and sampling");
  cli::define_checkpoint_flags(flags, /*save_every=*/100, "held-out loss");
  cli::define_report_flags(flags);
  flags.define("generate", "false",
               "only generate: load the latest checkpoint of --checkpoint_dir (with "
               "--keep_best: the best) on this mesh and layout (the model's sizes come from "
               "it), and continue --prompt");
  flags.define("sample_bytes", "160", "bytes of text to generate after training (0: none)");
  flags.define("prompt", "The ", "text the sample starts from (1 .. --length bytes)");
  flags.define("temperature", "0.7", "sampling temperature (0: most likely byte)");
  flags.define("top_k", "0", "sample from the k most likely bytes only (0: all)");
  flags.define("top_p", "1", "sample from the most likely bytes holding this probability");
  flags.define("beams", "1", ">= 2: beam search with this many beams instead of sampling");
  flags.define("alpha", "0.6", "beam search's length penalty exponent");
  flags.define("stop_byte", "-1", "a byte (0-255) that ends the sample (-1: none)");
  flags.define("loss_digits", "6", "significant digits of printed losses (17: exact)");
  cli::define_mesh_flags(flags);
}

}  // namespace

int main(int argc, char** argv) {
  return mtf::cli::run_example("transformer_lm", [&]() -> int {
    cli::Flags flags;
    define_flags(flags);
    if (!flags.parse(argc, argv)) return 0;

    models::TransformerConfig cfg =
        models::transformer_config_from_flags(flags, models::TransformerConfig(), false);
    cfg.dropout = static_cast<float>(flags.f64("dropout"));
    cfg.z_loss = static_cast<float>(flags.f64("z_loss"));
    cfg.learning_rate = LearningRate(flags.str("lr"));
    cfg.clip_norm = static_cast<float>(flags.f64("clip_norm"));
    cfg.microbatches = flags.i64("microbatches");
    cfg.seed = static_cast<uint64_t>(flags.i64("seed"));
    const int64_t steps = flags.i64("steps");
    const int64_t eval_every = std::max<int64_t>(1, flags.i64("eval_every"));
    const int64_t sample_bytes = flags.i64("sample_bytes");
    const int digits = static_cast<int>(std::clamp<int64_t>(flags.i64("loss_digits"), 1, 17));
    const bool generate_only = flags.boolean("generate");
    const std::string checkpoint_dir = flags.str("checkpoint_dir");
    int64_t save_every = 0;
    std::unique_ptr<CheckpointManager> checkpoints =
        cli::checkpoints_from_flags(flags, &save_every);
    cli::keep_best_from_flags(flags, checkpoints.get(), save_every, eval_every, "heldout_loss",
                              /*higher_is_better=*/false);
    if (steps < 0) throw ValueError("--steps must be >= 0");
    if (sample_bytes < 0) throw ValueError("--sample_bytes must be >= 0");
    if (flags.i64("beams") < 1) throw ValueError("--beams must be >= 1");
    models::GenerationOptions gen;
    gen.sampling.temperature = flags.f64("temperature");
    gen.sampling.top_k = flags.i64("top_k");
    gen.sampling.top_p = flags.f64("top_p");
    gen.sampling.stop = static_cast<int32_t>(flags.i64("stop_byte"));
    gen.sampling.seed = cfg.seed;
    gen.beams = flags.i64("beams");
    gen.alpha = flags.f64("alpha");
    gen.sampling.validate(256);  // the flags' errors before any work
    models::BeamOptions{gen.beams, gen.alpha, gen.sampling.stop}.validate(256);
    const std::string prompt = flags.str("prompt");
    if (prompt.empty()) throw ValueError("--prompt must hold at least one byte");

    std::string transport_name;
    MeshConfig mesh = cli::mesh_config_from_flags(flags, &transport_name);
    cfg.validate();  // --microbatches a divisor of --batch, before the layout's check
    cli::check_microbatches(cfg.batch, cfg.microbatches, mesh);
    auto describe = [&](const models::TransformerConfig& c) {
      std::printf(
          "model: %lld layers, d_model %lld, d_ff %lld, %lld heads of %lld, %lld parameters\n",
          static_cast<long long>(c.layers), static_cast<long long>(c.d_model),
          static_cast<long long>(c.d_ff), static_cast<long long>(c.heads),
          static_cast<long long>(c.d_kv), static_cast<long long>(c.num_parameters()));
      std::printf("%s\n", cli::describe_mesh(mesh, transport_name).c_str());
    };
    auto check_prompt = [&](const models::TransformerConfig& c) {
      if (static_cast<int64_t>(prompt.size()) > c.length) {
        throw ValueError("--prompt holds " + std::to_string(prompt.size()) +
                         " bytes, more than the model's length " + std::to_string(c.length) +
                         ": shorten it");
      }
    };

    if (generate_only) {
      if (!checkpoints) throw ValueError("--generate needs --checkpoint_dir");
      // With --keep_best: the best checkpoint, when one is recorded.
      const auto best = checkpoints->best();
      auto path = cli::chosen_checkpoint(flags, checkpoints.get());
      if (!path)
        path = flags.boolean("keep_best") && best ? std::optional(best->first)
                                                  : checkpoints->latest_valid_path();
      if (!path) {
        throw ValueError("--checkpoint_dir \"" + checkpoint_dir +
                         "\" holds no checkpoint: train into it first");
      }
      const CheckpointInfo info = read_checkpoint_info(*path);
      models::TransformerConfig c = config_of(info, cfg);
      check_prompt(c);
      models::TransformerLm lm(c);
      cli::resolve_auto_layout(flags, mesh, lm.graph(),
                               {{lm.loss}, lm.train_ops, c.microbatches, lm.apply_ops});
      const auto decoder = make_decoder(lm, mesh, sample_bytes, gen);
      cli::check_layout_dimensions(mesh, lm.graph());
      cli::check_layout_dimensions(mesh, lm.graph());
      Session session(lm.graph(), mesh);
      describe(c);
      // The model's weights only (not its optimizer's state, nor caches).
      RestoreOptions only_weights;
      for (const Tensor& v : lm.graph().trainable_variables())
        only_weights.only.push_back(v.op().name());
      restore_checkpoint(session, *path, only_weights);
      std::printf("restored %s (step %lld, saved on mesh \"%s\", layout \"%s\")\n", path->c_str(),
                  static_cast<long long>(info.step), info.mesh_shape.c_str(), info.layout.c_str());
      print_sample(session, lm, decoder.get(), prompt, sample_bytes, gen);
      return 0;
    }

    check_prompt(cfg);
    const models::Corpus corpus = models::load_text_corpus(flags.str("data_dir"));
    const int64_t eval_batches = std::min(
        flags.i64("eval_batches"), models::window_batches(corpus.heldout, cfg.batch, cfg.length));
    if (eval_batches < 1) {
      throw ValueError("the held-out text holds no batch of --batch windows of --length bytes");
    }
    const double baseline = models::unigram_bits_per_byte(
        corpus.train, corpus.heldout.substr(0, eval_batches * cfg.batch * cfg.length + 1));
    std::printf("data: %zu files from %s, %zu training and %zu held-out bytes\n",
                corpus.files.size(), flags.str("data_dir").c_str(), corpus.train.size(),
                corpus.heldout.size());

    models::TransformerLm lm(cfg);
    cli::resolve_auto_layout(flags, mesh, lm.graph(),
                             {{lm.loss}, lm.train_ops, cfg.microbatches, lm.apply_ops});
    const auto decoder = make_decoder(lm, mesh, sample_bytes, gen);
    cli::check_layout_dimensions(mesh, lm.graph());
    Session session(lm.graph(), mesh);
    describe(cfg);
    // Lowering the training step checks every tensor's layout before training.
    session.counters_text({lm.loss}, lm.train_ops);
    std::printf("byte-frequency baseline: %.4f bits per byte on the held-out text\n", baseline);

    models::WindowSampler sampler(corpus.train, cfg.batch, cfg.length, cfg.seed);
    double interval = 0, interval_norm = 0;
    int64_t interval_steps = 0;
    int64_t first_step = 1;
    const std::optional<std::string> chosen = cli::chosen_checkpoint(flags, checkpoints.get());
    if (checkpoints) {
      checkpoints->check_writable();  // before training, not at the first save
      // Accumulation buffers are zero between steps: not saved, so that a
      // run resumes with any --microbatches.
      SaveOptions skip_buffers;
      for (const std::string& name : session.variable_names())
        if (is_accumulation_buffer(name)) skip_buffers.skip.push_back(name);
      checkpoints->set_save_options(skip_buffers);
      if (const auto path = chosen ? chosen : checkpoints->latest_valid_path()) {
        // Weights, optimizer state, run counter, data position and the loss
        // accumulated since the last print: training goes on as if never
        // stopped. The model's sizes must be the checkpoint's.
        const CheckpointInfo info = read_checkpoint_info(*path);
        if (config_metadata(config_of(info, cfg)) != config_metadata(cfg)) {
          throw ValueError("checkpoint " + *path +
                           " holds a model of other sizes than these flags': pass its sizes, "
                           "or use another --checkpoint_dir");
        }
        RestoreOptions model_only;
        model_only.only = model_variables(session, decoder.get());
        restore_checkpoint(session, *path, model_only);
        sampler.restore(info.metadata.at("sampler"));
        interval = std::stod(info.metadata.at("interval_loss"));
        interval_steps = std::stoll(info.metadata.at("interval_steps"));
        const auto norm = info.metadata.find("interval_gradient_norm");  // absent before clipping
        if (norm != info.metadata.end()) interval_norm = std::stod(norm->second);
        first_step = info.step + 1;
        std::printf("resumed from %s at step %lld (saved on mesh \"%s\", layout \"%s\")\n",
                    path->c_str(), static_cast<long long>(info.step), info.mesh_shape.c_str(),
                    info.layout.c_str());
      }
    }
    double last_heldout = NAN;  // of the evaluation at this step, if any
    auto save = [&](int64_t step) {
      std::map<std::string, std::string> meta = config_metadata(cfg);
      char loss[64];
      std::snprintf(loss, sizeof(loss), "%.17g", interval);
      meta["sampler"] = sampler.state();
      meta["interval_loss"] = loss;
      meta["interval_steps"] = std::to_string(interval_steps);
      if (!std::isnan(last_heldout)) {
        std::snprintf(loss, sizeof(loss), "%.17g", last_heldout);
        meta["heldout_loss"] = loss;
      }
      std::snprintf(loss, sizeof(loss), "%.17g", interval_norm);
      meta["interval_gradient_norm"] = loss;
      checkpoints->save(session, step, meta);
    };
    // Each process reads only the windows its processors hold (the whole
    // batch where the length is split too, or inputs and targets differ).
    // With microbatches: the whole batch, cut into parts on the host.
    const Session::FeedBlock block = session.local_feed_block(lm.inputs);
    const bool sharded = cfg.microbatches == 1 && !block.whole &&
                         block.shape[1].size == cfg.length &&
                         session.local_feed_block(lm.targets).begin == block.begin;
    const Shape fed = sharded                 ? block.shape
                      : cfg.microbatches == 1 ? lm.inputs.shape()
                                              : Shape({{"batch", cfg.batch}, lm.length});
    HostTensor in(fed, int32), tg(fed, int32);
    // The gradient norm is fetched when clipping computes it anyway, or for
    // the summaries.
    cli::TrainingReport report(flags, mesh, "tokens", steps);
    const bool fetch_norm = cfg.clip_norm > 0 || report.writes_summaries();
    std::vector<Tensor> fetches{lm.loss};
    if (fetch_norm && cfg.microbatches == 1) fetches.push_back(lm.gradient_norm);
    report.set_flops_per_step(
        static_cast<double>(cfg.microbatches) * session.flops_per_run(fetches, lm.train_ops) +
        (lm.apply_ops.empty() ? 0.0 : session.flops_per_run({}, lm.apply_ops)));
    if (report.writes_summaries()) std::printf("%s\n", report.describe().c_str());
    AdafactorOptions adafactor;  // the model's optimizer: for the rate it applies
    adafactor.learning_rate = cfg.learning_rate;
    const LearningRate rate = adafactor.effective_learning_rate();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = first_step; step <= steps; ++step) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto [loss, norm] =
          train_step(session, lm, sampler, in, tg, sharded ? block.begin[0] : 0, fetch_norm);
      cli::TrainingReport::Step figures;
      figures.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      figures.loss = loss;
      figures.learning_rate = rate.at(step);
      figures.gradient_norm = norm;
      figures.items = static_cast<double>(cfg.batch * cfg.length);
      report.step(step, figures);
      if (step == first_step && mesh.process_transport) {
        std::printf("input: this process read %lld of the batch's %lld bytes per step\n",
                    static_cast<long long>(session.last_fed_bytes()),
                    static_cast<long long>(2 * cfg.batch * cfg.length * 4));
      }
      interval += figures.loss;
      if (fetch_norm) interval_norm += figures.gradient_norm;
      ++interval_steps;
      if (step == 1 || step % eval_every == 0 || step == steps) {
        // The same windows whatever the microbatches: their parts in turn.
        const double held =
            heldout_loss(session, lm, corpus.heldout, eval_batches * cfg.microbatches);
        last_heldout = held;
        report.evaluation(
            step, {{"heldout_loss", held}, {"heldout_bits_per_byte", held / std::log(2.0)}});
        char norm[64] = "";
        if (fetch_norm) {
          std::snprintf(norm, sizeof(norm), " gradient norm %.*g", digits,
                        interval_norm / static_cast<double>(interval_steps));
        }
        std::printf("step %lld loss %.*g held-out loss %.*g bits/byte %.4f%s\n",
                    static_cast<long long>(step), digits,
                    interval / static_cast<double>(interval_steps), digits, held,
                    held / std::log(2.0), norm);
        std::fflush(stdout);
        interval = 0;
        interval_norm = 0;
        interval_steps = 0;
      }
      if (checkpoints && (step % save_every == 0 || step == steps)) save(step);
      last_heldout = NAN;
      if (step == first_step) session.reset_profile();  // the first step warms caches up
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int64_t trained = std::max<int64_t>(0, steps - first_step + 1);
    std::printf("trained %lld steps in %.1f s (%.1f ms/step)\n", static_cast<long long>(trained),
                secs, trained ? 1000.0 * secs / static_cast<double>(trained) : 0.0);
    if (mesh.profile) std::printf("%s", session.profile().to_string().c_str());
    if (const auto best = checkpoints ? checkpoints->best() : std::nullopt) {
      std::printf("best checkpoint: %s (held-out loss %.*g)\n", best->first.c_str(), digits,
                  best->second);
    }
    if (sample_bytes > 0) print_sample(session, lm, decoder.get(), prompt, sample_bytes, gen);
    return 0;
  });
}
