// incremental_decoder.h — what greedy decoding, sampling and beam search
// need from a model that decodes one position at a time with caches: a
// batch of sequences, each step feeding one token per sequence at a
// position and returning the next token's logits; a prefill of prompts;
// and a reordering of the caches between steps (beam search's parents).
// TransformerDecoder (the LM) and EncDecDecoder (the encoder-decoder's
// decoder over its encoded sources) implement it.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mtf/mtf.h"

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

class IncrementalDecoder {
 public:
  virtual ~IncrementalDecoder() = default;

  // Sequences decoded together, the longest sequence (prompt included) and
  // the vocabulary; name() prefixes error messages.
  virtual int64_t batch_size() const = 0;
  virtual int64_t length() const = 0;
  virtual int64_t vocab() const = 0;
  virtual const char* name() const = 0;

  // The logits, row by row (batch x vocab), after feeding `tokens` (one per
  // sequence) at position p; the step writes p's caches.
  virtual std::vector<float> step(Session& session, const std::vector<int32_t>& tokens,
                                  int64_t p) const = 0;
  // The prompts (one per sequence, all of one length n, 1 <= n <= length):
  // the logits after position n - 1, row by row; the next step is at n.
  virtual std::vector<float> prefill(Session& session,
                                     const std::vector<std::vector<int32_t>>& prompts) const = 0;
  // Sequence b takes over the caches of sequence parents[b].
  virtual void reorder(Session& session, const std::vector<int32_t>& parents) const = 0;

  // ValueError unless there is one prompt per sequence, all of one length
  // 1 .. length, of tokens in the vocabulary (`who` names the caller).
  void check_prompts(const std::vector<std::vector<int32_t>>& prompts, const char* who) const;
  // ValueError unless there is one token per sequence, each in the
  // vocabulary, and p is a position (`who` names the caller).
  void check_step(const std::vector<int32_t>& tokens, int64_t p, const char* who) const;
  // ValueError unless there is one parent per sequence, each a sequence.
  void check_parents(const std::vector<int32_t>& parents) const;

  // Prefills the prompts (all of one length >= 1), then appends `steps`
  // tokens chosen greedily (the highest logit, the lowest id on ties), up to
  // length() in all. Returns each sequence, prompt included.
  std::vector<std::vector<int32_t>> greedy(Session& session,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           int64_t steps) const;
  // The same with tokens chosen by `options`; a sequence that emits
  // options.stop ends there (the others go on).
  std::vector<std::vector<int32_t>> generate(Session& session,
                                             const std::vector<std::vector<int32_t>>& prompts,
                                             int64_t steps, const SamplingOptions& options) const;
};

}  // namespace mtf::models
