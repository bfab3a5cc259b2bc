#include "models/transformer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "cli/dtype_flags.h"
#include "models/config_checks.h"
#include "models/transformer_blocks.h"

namespace mtf::models {

void TransformerConfig::validate() const {
  check_sizes("transformer", {{"layers", layers},
                              {"d_model", d_model},
                              {"d_ff", d_ff},
                              {"heads", heads},
                              {"d_kv", d_kv},
                              {"vocab", vocab},
                              {"length", length},
                              {"batch", batch}});
  if (moe_experts < 0 || moe_experts == 1) {
    throw ValueError("transformer: moe_experts must be 0 (no experts) or at least 2, got " +
                     std::to_string(moe_experts));
  }
  check_rate("transformer", "dropout", dropout);
  if (microbatches < 1 || batch % microbatches != 0) {
    throw ValueError("transformer: " + std::to_string(microbatches) +
                     " microbatches do not divide the batch of " + std::to_string(batch) +
                     " sequences into equal parts; give a divisor of it");
  }
}

TransformerConfig TransformerConfig::paper(int64_t d_ff, int64_t heads) {
  TransformerConfig c;
  c.layers = 6;
  c.d_model = 1024;
  c.d_kv = 256;
  c.d_ff = d_ff;
  c.heads = heads;
  c.vocab = 32768;
  c.length = 256;
  c.batch = 256;
  return c;
}

namespace {
struct SizeFlag {
  const char* name;
  int64_t TransformerConfig::*field;
  const char* help;
};
const SizeFlag kSizeFlags[] = {
    {"layers", &TransformerConfig::layers, "Transformer blocks"},
    {"d_model", &TransformerConfig::d_model, "model dimension"},
    {"d_ff", &TransformerConfig::d_ff, "feed-forward hidden dimension"},
    {"heads", &TransformerConfig::heads, "attention heads"},
    {"d_kv", &TransformerConfig::d_kv, "key/value dimension per head"},
    {"length", &TransformerConfig::length, "tokens (bytes) per sequence"},
    {"batch", &TransformerConfig::batch, "sequences per step"},
    {"vocab", &TransformerConfig::vocab, "vocabulary size"},
    {"moe_experts", &TransformerConfig::moe_experts,
     "experts per feed-forward block (0: a dense block)"},
};
}  // namespace

void define_transformer_flags(cli::Flags& flags, const TransformerConfig& defaults,
                              bool with_vocab) {
  for (const SizeFlag& f : kSizeFlags) {
    if (!with_vocab && std::string(f.name) == "vocab") continue;
    flags.define(f.name, std::to_string(defaults.*(f.field)), f.help);
  }
  flags.define("recompute", defaults.recompute ? "true" : "false",
               "recompute each layer's activations in the backward pass instead of keeping "
               "them (less memory, more compute)");
  cli::define_dtype_flags(flags);
}

TransformerConfig transformer_config_from_flags(const cli::Flags& flags, TransformerConfig defaults,
                                                bool with_vocab) {
  for (const SizeFlag& f : kSizeFlags) {
    if (!with_vocab && std::string(f.name) == "vocab") continue;
    defaults.*(f.field) = flags.i64(f.name);
  }
  defaults.recompute = flags.boolean("recompute");
  defaults.variable_dtype = cli::variable_dtype_from_flags(flags);
  return defaults;
}

int64_t TransformerConfig::num_parameters() const {
  const int64_t attention = 4 * d_model * heads * d_kv;
  const int64_t ffn = moe_experts > 0 ? moe_experts * (2 * d_model * d_ff + d_model)  // + gate
                                      : 2 * d_model * d_ff;
  const int64_t norms = 2 * 2 * d_model;
  return layers * (attention + ffn + norms) + 2 * d_model  // final layer_norm
         + vocab * d_model                                 // token embedding
         + length * d_model                                // position embedding
         + d_model * vocab;                                // vocabulary projection
}

TransformerLm::TransformerLm(const TransformerConfig& config)
    : batch{"batch", config.batch / std::max<int64_t>(1, config.microbatches)},
      length{"length", config.length},
      memory_length{"memory_length", config.length},
      d_model{"d_model", config.d_model},
      d_ff{"d_ff", config.d_ff},
      heads{"heads", config.heads},
      d_kv{"d_kv", config.d_kv},
      vocab{"vocab", config.vocab},
      config_(config),
      mesh_(graph_, "mesh") {
  config.validate();
  graph_.set_seed(config.seed);
  graph_.set_layer_slice_dtype(config.variable_dtype.slice);
  inputs = placeholder(mesh_, Shape({batch, length}), int32, "inputs");
  targets = placeholder(mesh_, Shape({batch, length}), int32, "targets");
  const Tensor logits = logits_of(inputs, 1.0f - config.dropout, config.recompute, &moe_loss);
  loss = layers::softmax_cross_entropy_mean(logits, targets, vocab, config.z_loss);
  if (config.moe_experts > 0) loss = loss + moe_loss;
  AdafactorOptions opt;
  opt.learning_rate = config.learning_rate;
  AdafactorOptimizer optimizer(opt);
  optimizer.set_clip_norm(config.clip_norm);
  const GradientAccumulation steps(optimizer, loss, config.microbatches);
  train_ops = steps.accumulate_ops();
  apply_ops = steps.apply_ops();
  eval_logits = config.dropout > 0 || config.recompute || config.moe_experts > 0
                    ? logits_of(inputs, 1.0f, false)
                    : logits;
  eval_loss = layers::softmax_cross_entropy_mean(eval_logits, targets, vocab);
  if (eval_logits.dtype() != float32) eval_logits = cast(eval_logits, float32);  // read as floats
  // Made last (a run that does not fetch it skips it), so that the graph's
  // other ops keep their names.
  gradient_norm = optimizer.gradient_norm();
}

Blocks TransformerLm::blocks(float keep_prob) const {
  return Blocks{"layer", "relu", d_model, d_ff, heads, d_kv, keep_prob};
}

Tensor TransformerLm::logits_of(const Tensor& ids, float keep_prob, bool recompute,
                                Tensor* aux_loss) {
  const VariableDType& vd = config_.variable_dtype;
  Tensor x = layers::embedding(ids, vocab, d_model, "embedding", 1.0f, vd) +
             layers::get_or_create_variable(mesh_, "positions", Shape({length, d_model}),
                                            Initializer::normal(0.0f, 1.0f), vd);
  const Tensor mask = layers::attention_mask_autoregressive(mesh_, length, memory_length);
  const Blocks blocks = this->blocks(keep_prob);
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string name = "layer_" + std::to_string(l);
    // By value: recompute_grad calls it again when the gradients are built.
    auto layer = [this, name, mask, blocks](const std::vector<Tensor>& in) {
      const Tensor x =
          blocks.attention(in[0], nullptr, length, memory_length, mask, name + "/attention");
      if (config_.moe_experts == 0)
        return std::vector<Tensor>{blocks.feed_forward(x, name + "/ffn"), zeros(mesh_, Shape())};
      layers::MoeOptions moe;
      moe.experts = {"experts", config_.moe_experts};
      moe.hidden = {"d_ff", d_ff.size};
      const layers::MoeOutput out =
          layers::moe(blocks.norm(x, name + "/ffn_norm"), length, name + "/moe", moe);
      return std::vector<Tensor>{x + layers::dropout_if(out.y, blocks.keep_prob), out.loss};
    };
    const std::vector<Tensor> out = recompute ? recompute_grad(layer, {x}) : layer({x});
    x = out[0];
    if (aux_loss) *aux_loss = aux_loss->valid() ? *aux_loss + out[1] : out[1];
  }
  x = blocks.norm(x, "final_norm");
  layers::DenseOptions no_bias;
  no_bias.use_bias = false;
  return layers::dense(x, {vocab}, {d_model}, "logits", no_bias);
}

}  // namespace mtf::models
