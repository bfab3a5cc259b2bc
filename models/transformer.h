// transformer.h — the decoder-only Transformer language model of the
// Mesh-TensorFlow paper: token embedding + learned position embedding, then
// `layers` blocks of [layer_norm -> causal multi-head self-attention ->
// residual, layer_norm -> dense_relu_dense -> residual], a final layer_norm
// and a vocabulary projection, trained on next-token cross-entropy (with
// z-loss) by Adafactor. Dimensions are named as in the paper's layout
// `batch:batch;vocab:model;d_ff:model;heads:model`. Shared by the example,
// mtf-sim, the tests and the benchmark.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "mtf/mtf.h"

namespace mtf::models {

struct TransformerConfig {
  int64_t layers = 2;
  int64_t d_model = 128;
  int64_t d_ff = 512;
  int64_t heads = 4;
  int64_t d_kv = 32;
  int64_t vocab = 256;  // bytes
  int64_t length = 64;
  int64_t batch = 16;
  float dropout = 0.0f;  // training only
  float z_loss = 1e-4f;
  LearningRate learning_rate =
      0.0f;                // Adafactor's (0: its default schedule); a float or a schedule
  float clip_norm = 0.0f;  // > 0: gradients clipped to this global norm first
  // Each step's batch trains as this many equal parts, their gradients
  // accumulated (mtf/gradient_accumulation.h): the graph's batch dimension
  // is batch / microbatches. 1: the whole batch at once.
  int64_t microbatches = 1;
  // Each layer of the training graph under recompute_grad: its activations
  // are recomputed in the backward pass instead of kept (less memory, about
  // one more forward pass of compute).
  bool recompute = false;
  // 0: each layer's feed-forward block is dense_relu_dense. N >= 2: a
  // mixture of N experts (layers::moe, top-2 gating, each sequence a group,
  // each expert d_ff wide), its load-balancing loss added to the training
  // loss; the "experts" dimension may be laid out like any other.
  int64_t moe_experts = 0;
  uint64_t seed = 1;
  // Weights kept as .slice, activations in .activation (master float32;
  // the loss is float32 either way).
  VariableDType variable_dtype;
  // Throws ValueError naming a field that is not positive.
  void validate() const;
  // The paper's language model (6 layers, d_model 1024, d_kv 256, vocabulary
  // 32768, batch 256 sequences of 256 tokens) at one of its d_ff/heads sizes.
  static TransformerConfig paper(int64_t d_ff, int64_t heads);
  // Parameters of the model (not the optimizer's slots).
  int64_t num_parameters() const;
};

// Flags for the model's sizes (--layers --d_model --d_ff --heads --d_kv
// --length --batch, and --vocab when with_vocab), --moe_experts and --recompute,
// defaulting to `defaults`; and the config they give (other fields from
// `defaults`).
void define_transformer_flags(cli::Flags& flags, const TransformerConfig& defaults,
                              bool with_vocab);
TransformerConfig transformer_config_from_flags(const cli::Flags& flags, TransformerConfig defaults,
                                                bool with_vocab);

struct Blocks;  // models/transformer_blocks.h

class TransformerLm {
 public:
  // Builds the training graph (with dropout and Adafactor updates) and an
  // evaluation graph sharing its variables (no dropout).
  explicit TransformerLm(const TransformerConfig& config);

  Graph& graph() { return graph_; }
  const TransformerConfig& config() const { return config_; }

  // batch: the rows one run sees (config.batch / config.microbatches).
  Dimension batch, length, memory_length, d_model, d_ff, heads, d_kv, vocab;
  // int32 [batch, length]: inputs are the bytes at positions 0..L-1 of a
  // window, targets the bytes at 1..L.
  Tensor inputs, targets;
  Tensor loss;         // training loss (mean cross-entropy + z-loss, dropout on)
  Tensor eval_loss;    // mean cross-entropy of the evaluation graph, in nats
  Tensor eval_logits;  // [batch, length, vocab] of the evaluation graph
  // Run with each microbatch's feeds (the whole step when microbatches is
  // 1); then apply_ops once, without feeds (empty when microbatches is 1).
  std::vector<Operation*> train_ops, apply_ops;
  Tensor gradient_norm;  // the gradients' global norm before clipping (a scalar to fetch)
  Tensor moe_loss;       // the training graph's summed load-balancing losses (zero without experts)

  // The pieces its blocks are made of (layer norm, ReLU feed-forward), as
  // the training graph and the decoder build them.
  Blocks blocks(float keep_prob) const;

 private:
  // aux_loss, when given, receives the sum of the layers' load-balancing losses.
  Tensor logits_of(const Tensor& ids, float keep_prob, bool recompute, Tensor* aux_loss = nullptr);
  TransformerConfig config_;
  Graph graph_;
  Mesh mesh_;
};

}  // namespace mtf::models
