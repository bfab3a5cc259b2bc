// transformer_encdec.h — the paper's sequence-to-sequence Transformer, as
// Mesh TensorFlow's transformer library (T5's variant) builds it: an encoder
// stack and a decoder stack (causal self-attention, then attention over the
// encoder's output), each block pre-normalized with a residual connection,
// one embedding table shared by both inputs and the output projection.
//
// Choices: RMS norm (T5) or layer norm; a ReLU or gated-GELU feed-forward
// block; T5's bucketed relative position bias (one table per stack, shared
// by its layers; bidirectional in the encoder, causal in the decoder) or
// learned absolute positions; dropout on every residual branch, in attention
// and in the feed-forward block (training graph only); label smoothing.
//
// Ids: 0 is padding (never attended to, never in the loss), 1 ends a
// sentence. The decoder reads the targets shifted right by one, a 0 first.
// Packed rows (config.packed) hold several pairs one after another, with
// segment ids (1, 2, ... per pair, 0 for padding) and positions (from 0 in
// each pair): attention stays within a segment, positions restart, and the
// decoder's shift restarts at each segment, so every pair gets the loss it
// would get alone.
//
// Dimensions: "batch", "inputs_length", "targets_length", "d_model", "d_ff",
// "heads", "d_kv", "vocab" — lay any of them out over a mesh axis
// ("batch:rows;heads:cols;d_ff:cols;vocab:cols").
#pragma once

#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::models {

struct EncDecConfig {
  int64_t encoder_layers = 3, decoder_layers = 3;
  int64_t d_model = 256, d_ff = 1024, heads = 4, d_kv = 64;
  int64_t vocab = 8000;  // shared by inputs and targets
  int64_t batch = 32, input_length = 48, target_length = 48;
  float dropout = 0.1f;  // training graph only
  // Dropout on each stack's input (the embeddings) and on its final norm's
  // output, where Mesh TensorFlow's layer stack applies `dropout` too; < 0:
  // the same as dropout; 0: none there (as nn.Transformer).
  float stack_dropout = -1.0f;
  float label_smoothing = 0.1f;       // training loss only
  std::string norm = "rms";           // "rms" or "layer"
  std::string ffn = "relu";           // "relu" or "gated_gelu"
  std::string position = "relative";  // "relative" or "absolute"
  int64_t relative_buckets = 32, relative_max_distance = 128;
  bool packed = false;
  // "adafactor" (Mesh TensorFlow's default) or "adam" (betas 0.9 / 0.98,
  // epsilon 1e-9, as the Transformer paper trains).
  std::string optimizer = "adafactor";
  // A float or a schedule. Adafactor's is relative to each parameter's scale
  // (0: its default, min(0.01, 1/sqrt(step))); Adam's is absolute and must be
  // given (> 0), e.g. "0.02*warmup(4000)*rsqrt(4000)".
  LearningRate learning_rate = 0.0f;
  float clip_norm = 0.0f;  // > 0: gradients clipped to this global norm first
  uint64_t seed = 1;
  VariableDType variable_dtype;
  // > 1: each batch trains as this many equal parts whose gradients
  // accumulate, weighted by their target tokens, before one update
  // (mtf/gradient_accumulation.h); a run sees rows_per_run() rows.
  int64_t microbatches = 1;
  int64_t rows_per_run() const { return batch / microbatches; }
  // ValueError naming the field that is out of range or unknown.
  void validate() const;
  // The rate the optimizer applies at each step (Adafactor's default
  // schedule where learning_rate is 0), for printing and summaries.
  LearningRate effective_learning_rate() const;
};

struct TransformerConfig;  // models/transformer.h

// An encoder-decoder of the LM's sizes, for the tools and benchmarks that
// take the LM's size flags: `layers` blocks in each stack, `length` for
// sources and targets, its d_model, d_ff, heads, d_kv, vocabulary, batch and
// variable dtypes; the other fields at their defaults.
EncDecConfig encdec_config_like(const TransformerConfig& lm);

class TransformerEncDec {
 public:
  explicit TransformerEncDec(const EncDecConfig& config);

  Graph& graph() { return graph_; }
  const Mesh& mesh() const { return mesh_; }
  const EncDecConfig& config() const { return config_; }

  Dimension batch, inputs_length, targets_length, d_model, vocab;

  // int32 placeholders: inputs [batch, inputs_length], targets [batch,
  // targets_length]; with config.packed also inputs_segmentation,
  // inputs_position, targets_segmentation and targets_position, of the same
  // shapes (invalid otherwise).
  Tensor inputs, targets;
  Tensor inputs_segmentation, inputs_position, targets_segmentation, targets_position;

  // The feeds for rows of one pair each (ids padded with 0): inputs and
  // targets, and for a packed model segment 1 over each row's ids and
  // positions from 0 — so that a packed model evaluates and translates
  // unpacked rows too.
  Feeds feeds(const HostTensor& input_ids, const HostTensor& target_ids) const;

  // Training: label-smoothed cross-entropy, mean over the non-padding target
  // tokens (float32); the optimizer's update ops. With config.microbatches > 1,
  // train_ops add a part's gradients (run with each part's feeds) and
  // apply_ops, run once after the parts without feeds, update with their
  // token-weighted mean (empty otherwise).
  Tensor loss;
  std::vector<Operation*> train_ops, apply_ops;
  Tensor gradient_norm;  // the gradients' global norm before clipping (a scalar to fetch)
  // Without dropout or smoothing: the cross-entropy per target token summed
  // over the batch (nats) and the number of non-padding target tokens, so
  // that several batches average exactly; and the logits [batch,
  // targets_length, vocab] (float32) the decoder gives the targets it is fed.
  Tensor eval_loss_sum, eval_tokens, eval_logits;

  // The pieces the graphs are made of, for EncDecDecoder (they make or find
  // the same variables by name):
  // the encoder's output [ids' dimensions, d_model] for int32 ids [rows,
  // inputs length] at `positions`, within segments when `segmentation` is
  // valid and else with padding masked, with the training graph's dropout
  // when `training` (none otherwise);
  Tensor encode(const Tensor& ids, const Tensor& segmentation, const Tensor& positions,
                bool training);
  // the shared embedding of ids, plus `stack`'s ("encoder" or "decoder")
  // learned absolute positions when the config has them;
  Tensor embed(const Tensor& ids, const Tensor& positions, const std::string& stack);
  // the output projection of the decoder's final output y (d_model
  // replaced by vocab): the embedding table, scaled by 1/sqrt(d_model).
  Tensor output_logits(const Tensor& y);
  const Dimension& d_ff() const { return d_ff_; }
  const Dimension& heads() const { return heads_; }
  const Dimension& d_kv() const { return d_kv_; }

 private:
  // The decoder's logits for the targets fed, with the training graph's
  // dropout when `training`; the variables are made once and shared.
  Tensor logits_of(bool training);

  EncDecConfig config_;
  Graph graph_;
  Mesh mesh_;
  Dimension d_ff_, heads_, d_kv_;
};

// Greedy translation by recomputation (the reference for the cached
// decoder, models/encdec_decoder.h): the decoder is run on the prefix so
// far, one position a step, and the most likely next id appended, until
// every sentence has ended (id 1) or the targets are full. `sources` are id
// sequences (without padding; cut to inputs_length), at most `batch` of
// them; returns each translation's ids without the ending. A packed model
// reads each sentence as a row of one segment.
std::vector<std::vector<int32_t>> translate_greedy(
    TransformerEncDec& model, Session& session, const std::vector<std::vector<int32_t>>& sources);

}  // namespace mtf::models
