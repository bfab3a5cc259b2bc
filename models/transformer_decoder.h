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
#include <random>
#include <string>
#include <vector>

#include "models/transformer.h"

namespace mtf::models {

// How the next token is chosen from a row of logits: temperature 0 takes
// the highest logit (the lowest id on ties); otherwise a draw from
// softmax(logits / temperature) restricted to the top_k highest (0: all)
// and then to the smallest set of highest whose probability reaches top_p.
struct SamplingOptions {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  int32_t stop = -1;  // a sequence that emits this token ends there (-1: none)
  uint64_t seed = 1;
  // ValueError naming the field: temperature < 0, top_k < 0, top_p outside
  // (0, 1], or stop outside the vocabulary.
  void validate(int64_t vocab) const;
};

// One choice from `row` (vocab logits) by `options`, drawing from `rng`.
int32_t choose_next(const float* row, int64_t vocab, const SamplingOptions& options,
                    std::mt19937_64& rng);

class TransformerDecoder {
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

  // One step: the logits, row by row (batch x vocab), after feeding `tokens`
  // at position p.
  std::vector<float> step(Session& session, const std::vector<int32_t>& tokens, int64_t p) const;
  // The prefill of `prompts` (one per sequence, all of one length n, 1 <= n
  // <= length): the logits after position n - 1, row by row; the next step
  // is at position n.
  std::vector<float> prefill(Session& session,
                             const std::vector<std::vector<int32_t>>& prompts) const;
  // Sequence b takes over the caches of sequence parents[b].
  void reorder(Session& session, const std::vector<int32_t>& parents) const;
  // Prefills the prompts (all of one length >= 1), then appends `steps`
  // tokens chosen greedily (the highest logit, the lowest id on ties), up to
  // the model's length in all. Returns each sequence, prompt included.
  std::vector<std::vector<int32_t>> greedy(Session& session,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           int64_t steps) const;
  // The same with tokens chosen by `options`; a sequence that emits
  // options.stop ends there (the others go on).
  std::vector<std::vector<int32_t>> generate(Session& session,
                                             const std::vector<std::vector<int32_t>>& prompts,
                                             int64_t steps, const SamplingOptions& options) const;

  // The cache variables (k and v of each layer): state, not weights, so
  // checkpoints of the model need not hold them.
  const std::vector<Tensor>& caches() const { return caches_; }
  int64_t length() const { return length_; }
  int64_t vocab() const { return vocab_; }
  // ValueError unless there is one prompt per sequence, all of one length
  // 1 .. length, of tokens in the vocabulary (`who` names the caller).
  void check_prompts(const std::vector<std::vector<int32_t>>& prompts, const char* who) const;

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
