// examples/translate: trains the sequence-to-sequence Transformer
// (models/transformer_encdec.h) to translate English to Spanish on Debian's
// verse-aligned Bibles (or any TSV corpus given by --corpus), with a
// SentencePiece vocabulary trained on the training split once and cached,
// on any mesh and layout. Prints training loss, the development set's loss
// per token and greedy BLEU as it trains, then the test set's BLEU (greedy
// and beam search, through the cached decoder) beside the source-copy
// baseline's. With --checkpoint_dir it saves checkpoints
// (with the vocabulary) and resumes from the latest; --translate "text"
// loads the latest and translates the text.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/checkpoint_flags.h"
#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "cli/training_report.h"
#include "models/translation_data.h"
#include "translate_flags.h"

namespace {

using namespace mtf;
using namespace translate_example;
using models::EncDecConfig;
using models::SentencePair;

struct Data {
  std::unique_ptr<models::Vocabulary> vocabulary;
  std::vector<models::EncodedPair> train, dev, test;
  std::vector<SentencePair> dev_pairs, test_pairs;
};

// Reads and splits the corpus, trains (or loads) the vocabulary, encodes.
Data load_data(const cli::Flags& flags, const EncDecConfig& c) {
  const std::string corpus = flags.str("corpus");
  const std::vector<SentencePair> pairs =
      corpus == "bible"
          ? models::read_sword_pairs(models::kEnglishWebModule, models::kSpanishRv1909Module)
          : models::read_tsv_pairs(corpus);
  const models::CorpusSplit split =
      models::split_corpus(pairs, static_cast<int>(flags.i64("dev_per_mille")),
                           static_cast<int>(flags.i64("test_per_mille")));
  if (split.train.empty() || split.dev.empty() || split.test.empty())
    throw ValueError("--corpus " + corpus + " gives an empty train, dev or test split (" +
                     std::to_string(pairs.size()) + " pairs): give a larger corpus");
  std::vector<std::string> sentences;
  for (const auto& p : split.train) {
    sentences.push_back(p.source);
    sentences.push_back(p.target);
  }
  models::VocabularyOptions vo;
  vo.size = flags.i64("vocab_size");
  const auto start = std::chrono::steady_clock::now();
  Data d;
  d.vocabulary = std::make_unique<models::Vocabulary>(
      models::cached_vocabulary(sentences, vo, flags.str("vocab_dir")));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t dropped = 0;
  d.train = models::encode_pairs(*d.vocabulary, split.train, c.input_length, c.target_length, true,
                                 &dropped);
  d.dev = models::encode_pairs(*d.vocabulary, split.dev, c.input_length, c.target_length, false,
                               nullptr);
  d.test = models::encode_pairs(*d.vocabulary, split.test, c.input_length, c.target_length, false,
                                nullptr);
  d.dev_pairs = split.dev;
  d.test_pairs = split.test;
  std::printf(
      "data: %zu pairs from %s: %zu train (%lld longer than the lengths left out), %zu "
      "dev, %zu test\n",
      pairs.size(), corpus.c_str(), d.train.size(), static_cast<long long>(dropped), d.dev.size(),
      d.test.size());
  std::printf("vocabulary: %s (%.1f s to train or load, cached in %s)\n",
              d.vocabulary->fingerprint().c_str(), secs, flags.str("vocab_dir").c_str());
  return d;
}

// BLEU of the translations (by `beams`) of the first `n` pairs (0: all).
models::BleuScore bleu_of(models::EncDecDecoder& decoder, Session& session,
                          const models::Vocabulary& v,
                          const std::vector<models::EncodedPair>& encoded,
                          const std::vector<SentencePair>& pairs, size_t n,
                          const models::BeamOptions& beams,
                          std::vector<std::string>* hypotheses = nullptr) {
  if (n == 0 || n > encoded.size()) n = encoded.size();
  const std::vector<models::EncodedPair> some(encoded.begin(), encoded.begin() + n);
  std::vector<std::string> hyps = models::translate_pairs(decoder, session, v, some, beams);
  std::vector<std::string> refs;
  for (const auto& e : some) refs.push_back(pairs[e.index].target);
  if (hypotheses) *hypotheses = hyps;
  return models::corpus_bleu_13a(hyps, refs);
}

models::BeamOptions beams_from_flags(const cli::Flags& flags) {
  models::BeamOptions o;
  o.beams = flags.i64("beams");
  o.alpha = flags.f64("alpha");
  if (o.beams < 1) throw ValueError("--beams must be >= 1, got " + std::to_string(o.beams));
  if (!(o.alpha >= 0)) throw ValueError("--alpha must be >= 0, got " + flags.str("alpha"));
  return o;
}

// The cached decoder of --decode_sentences x --beams sequences (made before
// the Session, which creates its caches): split like the training batch
// where the mesh splits that evenly, kept whole otherwise; each sentence
// encoded once for its beams.
std::unique_ptr<models::EncDecDecoder> make_decoder(models::TransformerEncDec& model,
                                                    const cli::Flags& flags,
                                                    const MeshConfig& mesh) {
  const int64_t sentences = flags.i64("decode_sentences");
  if (sentences < 1) throw ValueError("--decode_sentences must be >= 1");
  const int64_t rows = sentences * beams_from_flags(flags).beams;
  const auto axis = mesh.layout.mesh_axis_for("batch", mesh.mesh_shape);
  const bool even = !axis || rows % mesh.mesh_shape.dims()[*axis].size == 0;
  return std::make_unique<models::EncDecDecoder>(model, rows, even ? "batch" : "sequences",
                                                 beams_from_flags(flags).beams);
}

// The model's variables: every variable but the decoder's state and the
// accumulation buffers (zero between steps).
std::vector<std::string> model_variables(const Session& session,
                                         const models::EncDecDecoder& decoder) {
  std::vector<std::string> names;
  for (const std::string& name : session.variable_names()) {
    bool state = false;
    for (const Tensor& c : decoder.caches()) state = state || c.op().name() == name;
    if (!state && !is_accumulation_buffer(name)) names.push_back(name);
  }
  return names;
}

// The vocabulary beside the checkpoints (vocabulary.model), written whole
// or not at all, for --translate to read.
void save_vocabulary(const models::Vocabulary& v, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("cannot make --checkpoint_dir " + dir + ": " + ec.message());
  const std::string path = dir + "/vocabulary.model", tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << v.serialized();
    out.flush();
    if (!out) throw IoError("cannot write " + tmp + " (disk full?)");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

// The source-copy baseline: the English as its own "translation".
models::BleuScore copy_baseline(const std::vector<SentencePair>& pairs) {
  std::vector<std::string> hyps, refs;
  for (const auto& p : pairs) {
    hyps.push_back(p.source);
    refs.push_back(p.target);
  }
  return models::corpus_bleu_13a(hyps, refs);
}

// The checkpoint --translate and --eval use: the one --restore_step or
// --restore_file chooses, else with --keep_best the best one recorded, else
// the latest.
std::optional<std::string> checkpoint_to_use(const cli::Flags& flags,
                                             const CheckpointManager& checkpoints) {
  if (auto chosen = cli::chosen_checkpoint(flags, &checkpoints)) return chosen;
  if (flags.boolean("keep_best"))
    if (const auto best = checkpoints.best()) return best->first;
  return checkpoints.latest_valid_path();
}

// --translate: the latest (or best) checkpoint's model (its vocabulary
// beside it) translates one text.
int translate_text(const cli::Flags& flags, const EncDecConfig& cfg, CheckpointManager* checkpoints,
                   const MeshConfig& mesh) {
  if (!checkpoints) throw ValueError("--translate needs --checkpoint_dir");
  const auto path = checkpoint_to_use(flags, *checkpoints);
  if (!path) throw ValueError("--checkpoint_dir holds no checkpoint: train into it first");
  const models::Vocabulary v =
      models::Vocabulary::load(checkpoints->directory() + "/vocabulary.model");
  EncDecConfig c = cfg;
  c.vocab = v.size();
  c.batch = 1;
  c.microbatches = 1;
  c.packed = false;
  check_checkpoint(read_checkpoint_info(*path), c, v);
  models::TransformerEncDec model(c);
  const models::BeamOptions beams = beams_from_flags(flags);
  models::EncDecDecoder decoder(model, beams.beams, "sequences", beams.beams);
  cli::check_layout_dimensions(mesh, model.graph());
  Session session(model.graph(), mesh);
  RestoreOptions only_weights;
  for (const Tensor& t : model.graph().trainable_variables())
    only_weights.only.push_back(t.op().name());
  restore_checkpoint(session, *path, only_weights);
  std::vector<int32_t> ids = v.encode(flags.str("translate"));
  ids.push_back(models::Vocabulary::kEos);
  std::printf("%s\n", v.decode(models::translate(decoder, session, {ids}, beams)[0]).c_str());
  return 0;
}

// The test set's BLEU at the end, greedy and by --beams, beside the
// source-copy baseline's; the translations (by --beams) to --hypotheses
// when given.
void report_test(const cli::Flags& flags, models::EncDecDecoder& decoder, Session& session,
                 const Data& data) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(0, flags.i64("test_sentences")));
  const models::BeamOptions beams = beams_from_flags(flags);
  std::vector<std::string> hyps;
  models::BeamOptions greedy = beams;
  greedy.beams = 1;
  const auto timed = [&](const models::BeamOptions& o, std::vector<std::string>* h) {
    const auto t0 = std::chrono::steady_clock::now();
    const models::BleuScore b =
        bleu_of(decoder, session, *data.vocabulary, data.test, data.test_pairs, n, o, h);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("test, %s: %s (%.1f s)\n",
                o.beams == 1 ? "greedy" : (std::to_string(o.beams) + " beams").c_str(),
                b.to_string().c_str(), secs);
  };
  if (beams.beams > 1) timed(greedy, nullptr);
  timed(beams, &hyps);
  std::printf("source-copy baseline %s\n", copy_baseline(data.test_pairs).to_string().c_str());
  if (!flags.str("hypotheses").empty()) {
    std::ofstream out(flags.str("hypotheses"));
    for (const std::string& h : hyps) out << h << '\n';
    if (!out) throw IoError("cannot write --hypotheses " + flags.str("hypotheses"));
  }
}

// --eval: the test set's BLEU (and --hypotheses) of the latest (or best)
// checkpoint, or of --eval_step's.
int evaluate_checkpoint(const cli::Flags& flags, const EncDecConfig& cfg,
                        CheckpointManager* checkpoints, const MeshConfig& mesh) {
  if (!checkpoints) throw ValueError("--eval needs --checkpoint_dir");
  const int64_t step = flags.i64("eval_step");
  const std::optional<std::string> path =
      step > 0 ? checkpoints->path_of_step(step) : checkpoint_to_use(flags, *checkpoints);
  if (!path) throw ValueError("--checkpoint_dir holds no checkpoint: train into it first");
  const Data data = load_data(flags, cfg);
  EncDecConfig c = cfg;
  c.vocab = data.vocabulary->size();
  check_checkpoint(read_checkpoint_info(*path), c, *data.vocabulary);
  models::TransformerEncDec model(c);
  const std::unique_ptr<models::EncDecDecoder> decoder = make_decoder(model, flags, mesh);
  cli::check_layout_dimensions(mesh, model.graph());
  Session session(model.graph(), mesh);
  RestoreOptions model_only;
  model_only.only = model_variables(session, *decoder);
  restore_checkpoint(session, *path, model_only);
  std::printf("evaluating %s\n", path->c_str());
  report_test(flags, *decoder, session, data);
  return 0;
}

// A metadata value: the number to its last bit.
std::string number_text(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

// The training loss and gradient norm since the last evaluation.
struct Interval {
  double loss = 0, norm = 0;
  int64_t steps = 0;
  void add(const cli::TrainingReport::Step& f) {
    loss += f.loss;
    if (!std::isnan(f.gradient_norm)) norm += f.gradient_norm;
    ++steps;
  }
  double mean_loss() const { return loss / static_cast<double>(std::max<int64_t>(1, steps)); }
  double mean_norm() const { return norm / static_cast<double>(std::max<int64_t>(1, steps)); }
  // "; gradient norm N (clipped to C)" for the printed line ("" when the
  // norm was not fetched).
  std::string norm_text(bool fetched, float clip_norm) const {
    if (!fetched) return "";
    char text[96];
    std::snprintf(text, sizeof(text), "; gradient norm %.4g", mean_norm());
    std::string r = text;
    if (clip_norm > 0) {
      std::snprintf(text, sizeof(text), " (clipped to %g)", clip_norm);
      r += text;
    }
    return r;
  }
};

struct DevFigures {
  double loss = 0, bleu = 0;
  size_t sentences = 0;
};

// The development set's mean token loss, and the greedy BLEU of its first
// `sentences` sentences (none: 0).
DevFigures evaluate_dev(models::TransformerEncDec& model, Session& session,
                        models::EncDecDecoder& decoder, const Data& data, size_t sentences) {
  DevFigures d;
  d.loss = models::mean_token_loss(model, session, data.dev);
  d.sentences = std::min(sentences, data.dev.size());
  if (sentences == 0) return d;
  models::BeamOptions greedy;
  greedy.beams = 1;
  d.bleu =
      bleu_of(decoder, session, *data.vocabulary, data.dev, data.dev_pairs, sentences, greedy).bleu;
  return d;
}

// One training step: a run per microbatch (each the batcher's next rows)
// and, with accumulation, the update run. Its loss is the parts' mean
// weighted by their target tokens (the whole batch's token mean); the
// gradient norm, when fetched, that of the update.
cli::TrainingReport::Step train_step(models::TransformerEncDec& model, Session& session,
                                     models::TranslationBatcher& batcher, bool fetch_norm) {
  const int64_t parts = model.config().microbatches;
  std::vector<Tensor> fetches{model.loss};
  if (fetch_norm && parts == 1) fetches.push_back(model.gradient_norm);
  cli::TrainingReport::Step figures;
  double weighted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t part = 0; part < parts; ++part) {
    const Feeds feeds = batcher.next(model);
    const std::vector<HostTensor> out = session.run(fetches, feeds, model.train_ops);
    const double tokens = static_cast<double>(batcher.last_target_tokens());
    figures.loss = out[0].to_floats()[0];
    weighted += figures.loss * tokens;
    figures.items += tokens;
    if (fetches.size() > 1) figures.gradient_norm = out[1].to_floats()[0];
  }
  if (parts > 1) {
    std::vector<Tensor> norm;
    if (fetch_norm) norm.push_back(model.gradient_norm);
    const std::vector<HostTensor> out = session.run(norm, {}, model.apply_ops);
    if (fetch_norm) figures.gradient_norm = out[0].to_floats()[0];
    figures.loss = figures.items > 0 ? weighted / figures.items : 0.0;
  }
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return figures;
}

// Trains (resuming from --checkpoint_dir's latest), evaluating on the
// development set as it goes, then reports the test set.
int train(const cli::Flags& flags, const EncDecConfig& cfg, CheckpointManager* checkpoints,
          int64_t save_every, MeshConfig mesh, const std::string& transport_name) {
  const int64_t steps = flags.i64("steps");
  if (steps < 0) throw ValueError("--steps must be >= 0");
  const double minutes = flags.f64("minutes");
  const int64_t eval_every = std::max<int64_t>(1, flags.i64("eval_every"));
  const size_t eval_sentences =
      static_cast<size_t>(std::max<int64_t>(0, flags.i64("eval_sentences")));
  Data data = load_data(flags, cfg);
  EncDecConfig c = cfg;
  c.vocab = data.vocabulary->size();
  models::TransformerEncDec model(c);
  cli::resolve_auto_layout(flags, mesh, model.graph(),
                           {{model.loss}, model.train_ops, c.microbatches, model.apply_ops});
  const std::unique_ptr<models::EncDecDecoder> decoder = make_decoder(model, flags, mesh);
  cli::check_layout_dimensions(mesh, model.graph());
  Session session(model.graph(), mesh);
  RestoreOptions model_only;  // the decoder's state is neither saved nor restored
  model_only.only = model_variables(session, *decoder);
  std::printf("%s\n", cli::describe_mesh(mesh, transport_name).c_str());
  session.counters_text({model.loss}, model.train_ops);  // layouts checked before training
  models::TranslationBatcher batcher(data.train, c, c.seed);
  int64_t first_step = 1;
  const std::optional<std::string> chosen = cli::chosen_checkpoint(flags, checkpoints);
  if (checkpoints) {
    checkpoints->check_writable();  // before training, not at the first save
    const auto path = chosen ? chosen : checkpoints->latest_valid_path();
    // A checkpoint of another model or vocabulary is refused before
    // anything in the directory changes.
    if (path) check_checkpoint(read_checkpoint_info(*path), c, *data.vocabulary);
    save_vocabulary(*data.vocabulary, checkpoints->directory());
    SaveOptions skip_state;
    for (const Tensor& t : decoder->caches()) skip_state.skip.push_back(t.op().name());
    for (const std::string& name : session.variable_names())
      if (is_accumulation_buffer(name)) skip_state.skip.push_back(name);
    checkpoints->set_save_options(skip_state);
    if (path) {
      const CheckpointInfo info = read_checkpoint_info(*path);
      restore_checkpoint(session, *path, model_only);
      batcher.restore(info.metadata.at("data"));
      first_step = info.step + 1;
      std::printf("resumed from %s at step %lld\n", path->c_str(),
                  static_cast<long long>(info.step));
    }
  }
  const int digits = static_cast<int>(std::clamp<int64_t>(flags.i64("loss_digits"), 1, 17));
  cli::TrainingReport report(flags, mesh, "tokens", steps);
  // The gradient norm is fetched when clipping computes it anyway, or for
  // the summaries.
  const bool fetch_norm = c.clip_norm > 0 || report.writes_summaries();
  report.set_flops_per_step(
      static_cast<double>(c.microbatches) * session.flops_per_run({model.loss}, model.train_ops) +
      (model.apply_ops.empty() ? 0.0 : session.flops_per_run({}, model.apply_ops)));
  if (report.writes_summaries()) std::printf("%s\n", report.describe().c_str());
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  Interval interval;
  double tokens = 0, train_seconds = 0;
  int64_t step = first_step;
  const LearningRate rate = c.effective_learning_rate();
  for (; step <= steps && (minutes <= 0 || elapsed() < 60 * minutes); ++step) {
    cli::TrainingReport::Step figures = train_step(model, session, batcher, fetch_norm);
    figures.learning_rate = rate.at(step);
    report.step(step, figures);
    tokens += figures.items;
    train_seconds += figures.seconds;
    interval.add(figures);
    std::map<std::string, std::string> evaluated;  // this step's, for --keep_best
    if (step % eval_every == 0 || step == steps) {
      const DevFigures dev = evaluate_dev(model, session, *decoder, data, eval_sentences);
      report.evaluation(step, {{"dev_loss", dev.loss}, {"dev_bleu", dev.bleu}});
      evaluated = {{"dev_loss", number_text(dev.loss)}, {"dev_bleu", number_text(dev.bleu)}};
      std::printf(
          "step %lld loss %.*g dev loss %.*g dev BLEU %.2f (%zu sentences); learning rate "
          "%.3g%s; training %.0f target tokens/s (%.1f ms/step), %.1f min in all\n",
          static_cast<long long>(step), digits, interval.mean_loss(), digits, dev.loss, dev.bleu,
          dev.sentences, rate.at(step), interval.norm_text(fetch_norm, c.clip_norm).c_str(),
          tokens / train_seconds, 1000 * train_seconds / static_cast<double>(step - first_step + 1),
          elapsed() / 60);
      std::fflush(stdout);
      interval = Interval();
    }
    if (checkpoints && (step % save_every == 0 || step == steps)) {
      std::map<std::string, std::string> meta = model_metadata(c, *data.vocabulary);
      meta["data"] = batcher.state();
      meta.insert(evaluated.begin(), evaluated.end());
      checkpoints->save(session, step, meta);
    }
  }
  if (const auto best = checkpoints ? checkpoints->best() : std::nullopt)
    std::printf("best checkpoint: %s (%s %.4g)\n", best->first.c_str(),
                eval_sentences > 0 ? "dev BLEU" : "dev loss", best->second);
  std::printf("trained to step %lld in %.1f min\n", static_cast<long long>(step - 1),
              elapsed() / 60);
  report_test(flags, *decoder, session, data);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return mtf::cli::run_example("translate", [&]() -> int {
    cli::Flags flags;
    define_flags(flags);
    if (!flags.parse(argc, argv)) return 0;
    const EncDecConfig cfg = config_from_flags(flags);
    cfg.validate();
    int64_t save_every = 0;
    std::unique_ptr<CheckpointManager> checkpoints =
        cli::checkpoints_from_flags(flags, &save_every);
    std::string transport_name;
    const MeshConfig mesh = cli::mesh_config_from_flags(flags, &transport_name);
    cli::check_microbatches(cfg.batch, cfg.microbatches, mesh);
    // The best by development BLEU, or by loss when no BLEU is computed.
    const bool by_bleu = flags.i64("eval_sentences") > 0;
    cli::keep_best_from_flags(flags, checkpoints.get(), save_every,
                              std::max<int64_t>(1, flags.i64("eval_every")),
                              by_bleu ? "dev_bleu" : "dev_loss", by_bleu);
    if (!flags.str("translate").empty()) return translate_text(flags, cfg, checkpoints.get(), mesh);
    if (flags.boolean("eval")) return evaluate_checkpoint(flags, cfg, checkpoints.get(), mesh);
    return train(flags, cfg, checkpoints.get(), save_every, mesh, transport_name);
  });
}
