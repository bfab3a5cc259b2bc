#include "translate_flags.h"

#include "cli/checkpoint_flags.h"
#include "cli/dtype_flags.h"
#include "cli/mesh_flags.h"
#include "cli/training_report.h"

namespace translate_example {

using namespace mtf;
using models::EncDecConfig;

void define_flags(mtf::cli::Flags& flags) {
  flags.define("corpus", "bible",
               "\"bible\" (English-Spanish, through libsword) or a TSV file, source<TAB>target");
  flags.define("dev_per_mille", "20", "pairs per thousand in the development set");
  flags.define("test_per_mille", "20", "pairs per thousand in the test set");
  flags.define("vocab_size", "8000", "SentencePiece pieces (a joint vocabulary)");
  const char* home = std::getenv("HOME");
  flags.define("vocab_dir", home ? std::string(home) + "/.cache/mtf" : "/tmp/mtf-cache",
               "where trained vocabularies are cached");
  const EncDecConfig d;
  flags.define("encoder_layers", std::to_string(d.encoder_layers), "encoder blocks");
  flags.define("decoder_layers", std::to_string(d.decoder_layers), "decoder blocks");
  flags.define("d_model", std::to_string(d.d_model), "model dimension");
  flags.define("d_ff", std::to_string(d.d_ff), "feed-forward hidden dimension");
  flags.define("heads", std::to_string(d.heads), "attention heads");
  flags.define("d_kv", std::to_string(d.d_kv), "key/value dimension per head");
  flags.define("input_length", "64", "source pieces per row (longer pairs are not trained on)");
  flags.define("target_length", "64", "target pieces per row");
  flags.define("batch", std::to_string(d.batch), "rows per step");
  flags.define("norm", d.norm, "rms or layer");
  flags.define("ffn", d.ffn, "relu or gated_gelu");
  flags.define("position", d.position, "relative (T5's buckets) or absolute");
  flags.define("dropout", "0.1", "dropout rate during training");
  flags.define("stack_dropout", "-1",
               "dropout on the stacks' embeddings and final norm outputs (-1: --dropout, as Mesh "
               "TensorFlow places it; 0: none there, as nn.Transformer)");
  flags.define("label_smoothing", "0.1", "label smoothing of the training loss");
  flags.define("packed", "true", "pack several pairs into each row (first fit)");
  flags.define("optimizer", d.optimizer,
               "adafactor, or adam (betas 0.9/0.98, epsilon 1e-9; give it an --lr such as "
               "\"0.02*warmup(400)*rsqrt(400)\")");
  flags.define("lr", "0.03",
               "learning rate: a number or a schedule such as "
               "\"0.05*warmup(100)*linear_decay(0, 2000)\" (docs/training.md). Adafactor's is "
               "relative to each parameter's scale (0: its own, min(0.01, 1/sqrt(step)))");
  flags.define("clip_norm", "0",
               "clip the gradients to this global norm before each update (0: no clipping)");
  flags.define("microbatches", "1",
               "train each step's --batch rows as this many equal parts, their gradients "
               "accumulated (weighted by target tokens), then one update (less activation "
               "memory)");
  flags.define("steps", "2000", "training steps (about 50 minutes at the defaults on 2 cores)");
  flags.define("minutes", "0", "also stop training after this many minutes (0: no limit)");
  flags.define("eval_every", "500", "evaluate on the development set every this many steps");
  flags.define("eval_sentences", "128", "development sentences translated for BLEU (0: none)");
  flags.define("test_sentences", "0", "test sentences translated at the end (0: all)");
  flags.define("beams", "4", "beam search's beams for the test set and --translate (1: greedy)");
  flags.define("alpha", "0.6", "beam search's length penalty exponent");
  flags.define("decode_sentences", "16", "sentences decoded together");
  flags.define("hypotheses", "", "write the test set's translations to this file");
  flags.define("translate", "", "only translate this text with the latest checkpoint");
  flags.define("eval", "false",
               "only evaluate the latest checkpoint (--keep_best: the best; or --eval_step's) "
               "on the test set");
  flags.define("eval_step", "0", "with --eval: the checkpoint of this step (0: the latest)");
  flags.define("seed", "1", "seed for initialisation and data order");
  flags.define("loss_digits", "4", "significant digits of printed losses (17: exact)");
  cli::define_dtype_flags(flags);
  cli::define_checkpoint_flags(flags, /*save_every=*/500, "development BLEU (loss without it)");
  cli::define_report_flags(flags);
  cli::define_mesh_flags(flags);
}

EncDecConfig config_from_flags(const cli::Flags& flags) {
  EncDecConfig c;
  c.encoder_layers = flags.i64("encoder_layers");
  c.decoder_layers = flags.i64("decoder_layers");
  c.d_model = flags.i64("d_model");
  c.d_ff = flags.i64("d_ff");
  c.heads = flags.i64("heads");
  c.d_kv = flags.i64("d_kv");
  c.input_length = flags.i64("input_length");
  c.target_length = flags.i64("target_length");
  c.batch = flags.i64("batch");
  c.norm = flags.str("norm");
  c.ffn = flags.str("ffn");
  c.position = flags.str("position");
  c.dropout = static_cast<float>(flags.f64("dropout"));
  c.stack_dropout = static_cast<float>(flags.f64("stack_dropout"));
  c.label_smoothing = static_cast<float>(flags.f64("label_smoothing"));
  c.packed = flags.boolean("packed");
  c.optimizer = flags.str("optimizer");
  c.learning_rate = LearningRate(flags.str("lr"));
  c.clip_norm = static_cast<float>(flags.f64("clip_norm"));
  c.microbatches = flags.i64("microbatches");
  c.seed = static_cast<uint64_t>(flags.i64("seed"));
  c.variable_dtype = cli::variable_dtype_from_flags(flags);
  return c;
}

// What a checkpoint must agree on with the flags to be resumed or used.
std::map<std::string, std::string> model_metadata(const EncDecConfig& c,
                                                  const models::Vocabulary& v) {
  return {{"encoder_layers", std::to_string(c.encoder_layers)},
          {"decoder_layers", std::to_string(c.decoder_layers)},
          {"d_model", std::to_string(c.d_model)},
          {"d_ff", std::to_string(c.d_ff)},
          {"heads", std::to_string(c.heads)},
          {"d_kv", std::to_string(c.d_kv)},
          {"norm", c.norm},
          {"ffn", c.ffn},
          {"position", c.position},
          {"optimizer", c.optimizer},
          {"vocabulary", v.fingerprint()}};
}

// The checkpoint's model must be the flags' (and its vocabulary this one).
void check_checkpoint(const CheckpointInfo& info, const EncDecConfig& c,
                      const models::Vocabulary& v) {
  auto it = info.metadata.find("vocabulary");
  v.check_matches(it == info.metadata.end() ? "" : it->second, "checkpoint " + info.path);
  for (const auto& [key, value] : model_metadata(c, v)) {
    auto found = info.metadata.find(key);
    // Checkpoints from before the optimizer could be chosen were Adafactor's.
    const std::string held = found != info.metadata.end() ? found->second
                             : key == "optimizer"         ? "adafactor"
                                                          : "(none)";
    if (held != value) {
      throw ValueError("checkpoint " + info.path + " holds a model with " + key + " " + held +
                       ", not this run's " + value + ": pass its sizes and choices (--" + key +
                       "), or use another --checkpoint_dir");
    }
  }
}

}  // namespace translate_example
