// transformer_decoder.h — incremental decoding for TransformerLm: graphs,
// added to the LM's graph and sharing its variables, that keep each layer's
// keys and values as state. The prefill reads the prompts in one pass over
// the window and fills the caches; each step then takes one token per
// sequence at a fed position and computes that position only. The caches
// are non-trainable variables [batch, heads, memory_length, d_kv] laid out
// like any tensor (heads split over a mesh axis keep their cache split).
// Greedy decoding and sampling drive it from the host; beam search
// (beam_search.h) also reorders the caches between steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/incremental_decoder.h"
#include "models/transformer.h"

namespace mtf::models {

class TransformerDecoder : public IncrementalDecoder {
 public:
  // A decoder of `batch` sequences for lm (ValueError for a mixture-of-
  // experts LM: its capacity per sequence makes one-token steps route
  // differently from the whole window). The sequences' dimension is named
  // `batch_name`: "batch" lays them out as the training batch; another name
  // keeps them whole where the mesh cannot split them evenly (one sequence
  // on a batch-split mesh).
  TransformerDecoder(TransformerLm& lm, int64_t batch, const std::string& batch_name = "batch");

  Dimension batch;

  // One step.
  Tensor token;     // int32 [batch]: each sequence's token at `position`
  Tensor position;  // int32 []: 0 .. length - 1, the same for every sequence
  Tensor logits;    // [batch, vocab]: the next token's logits
  // Writes this position's keys and values into the caches: run them as
  // targets of every step (a step at position p overwrites what p held, and
  // rows after p are masked, so starting again at 0 starts new sequences).
  std::vector<Operation*> write_caches;

  // The prefill: prompts of one length n in one pass over the window.
  Tensor prompt;         // int32 [batch, length]: the prompts, each padded to the length
  Tensor prompt_end;     // int32 []: n - 1, the position of the prompts' last token
  Tensor prompt_logits;  // [batch, vocab]: the logits after position n - 1
  // Writes every position's keys and values (rows >= n hold the padding's,
  // masked and overwritten by the steps that follow).
  std::vector<Operation*> prefill_caches;

  // Beam search's reordering: sequence b takes over the caches of sequence
  // parents[b] (int32 [batch]).
  Tensor parents;
  std::vector<Operation*> reorder_caches;

  int64_t batch_size() const override { return batch.size; }
  int64_t length() const override { return length_; }
  int64_t vocab() const override { return vocab_; }
  const char* name() const override { return "TransformerDecoder"; }
  // A step at position p runs write_caches; the prefill runs prompt_logits
  // and prefill_caches; reorder runs reorder_caches.
  std::vector<float> step(Session& session, const std::vector<int32_t>& tokens,
                          int64_t p) const override;
  std::vector<float> prefill(Session& session,
                             const std::vector<std::vector<int32_t>>& prompts) const override;
  void reorder(Session& session, const std::vector<int32_t>& parents) const override;

  // The cache variables (k and v of each layer): state, not weights, so
  // checkpoints of the model need not hold them.
  const std::vector<Tensor>& caches() const { return caches_; }

 private:
  // The layers over `ids` (int32, [batch] for a step or [batch, length] for
  // the prefill) at positions `pos` ([] or [length]) embedded by `pos_emb`;
  // adds each layer's cache writes to `writes` and returns the final
  // layer_norm's input (ids' shape + d_model).
  Tensor layers_over(TransformerLm& lm, const Tensor& ids, const Tensor& pos, const Tensor& pos_emb,
                     std::vector<Operation*>& writes);
  Tensor vocab_logits(TransformerLm& lm, const Tensor& x);
  std::vector<Tensor> caches_;  // k and v of each layer
  std::string prefix_;
  int64_t length_, vocab_;
};

}  // namespace mtf::models
