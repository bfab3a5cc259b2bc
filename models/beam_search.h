// beam_search.h — beam search over an IncrementalDecoder, as Mesh TensorFlow's
// beam_search: each prompt grows `beams` hypotheses, ranked by their
// log-probability divided by the length penalty ((5 + n) / 6)^alpha of their
// n new tokens (Wu et al., 2016); a hypothesis that emits the stop token is
// finished. The decoder's batch holds every hypothesis (prompts x beams);
// between steps its caches are reordered to follow each hypothesis' parent.
#pragma once

#include <cstdint>
#include <vector>

#include "models/incremental_decoder.h"

namespace mtf::models {

struct BeamOptions {
  int64_t beams = 4;
  double alpha = 0.6;  // length penalty exponent (0: raw log-probability)
  int32_t stop = -1;   // the token that finishes a hypothesis (-1: none)
  // ValueError naming the field: beams < 1, alpha < 0, or stop outside the
  // vocabulary.
  void validate(int64_t vocab) const;
};

struct BeamResult {
  // Per prompt: the best hypothesis (prompt included, ending with the stop
  // token when it emitted one), its log-probability (of the new tokens) and
  // its score (log-probability / length penalty).
  std::vector<std::vector<int32_t>> sequences;
  std::vector<double> log_probs, scores;
};

// Beam search from `prompts` (one length >= 1 for all) for up to `steps`
// new tokens, within the model's length. decoder.batch must be
// prompts.size() x options.beams (ValueError otherwise). The search for a
// prompt ends early once no live hypothesis can beat its `beams` finished
// ones.
BeamResult beam_search(const IncrementalDecoder& decoder, Session& session,
                       const std::vector<std::vector<int32_t>>& prompts, int64_t steps,
                       const BeamOptions& options);

}  // namespace mtf::models
