// translation_data.h — sentence pairs as the encoder-decoder reads them:
// SentencePiece ids ending with the end id (1), batches of them padded or
// packed, and the model's evaluations over a set of pairs (loss per token,
// translations).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/bleu.h"
#include "models/encdec_decoder.h"
#include "models/parallel_corpus.h"
#include "models/transformer_encdec.h"
#include "models/vocabulary.h"

namespace mtf::models {

struct EncodedPair {
  std::vector<int32_t> source, target;  // each ends with Vocabulary::kEos
  size_t index = 0;                     // the pair's place in the encoded list's input
};

// Encodes every pair, appending the end id. A pair whose source or target
// (with its end) is longer than max_source / max_target is dropped (and
// counted in *dropped) when `drop_long`, else cut to fit, ending kept.
std::vector<EncodedPair> encode_pairs(const Vocabulary& vocabulary,
                                      const std::vector<SentencePair>& pairs, int64_t max_source,
                                      int64_t max_target, bool drop_long, int64_t* dropped);

// The model's training batches from a list of pairs: an epoch at a time in
// an order shuffled by (seed, epoch), each row one pair padded with 0
// (config.packed: pairs placed in that order into the first row with room
// for both sides, one after another with segment ids and positions, until
// a pair fits no row; it starts the next batch). Deterministic; its
// position is saved and restored as text for checkpoints.
class TranslationBatcher {
 public:
  TranslationBatcher(std::vector<EncodedPair> pairs, const EncDecConfig& config, uint64_t seed);
  // Fills the feeds of `model`'s placeholders for the next batch.
  Feeds next(const TransformerEncDec& model);
  // Non-padding target tokens (and pairs) of the last batch.
  int64_t last_target_tokens() const { return last_tokens_; }
  int64_t last_pairs() const { return last_pairs_; }
  std::string state() const;
  // ValueError for text state() did not write.
  void restore(const std::string& state);

 private:
  void reshuffle();
  std::vector<EncodedPair> pairs_;
  EncDecConfig config_;
  uint64_t seed_;
  std::vector<size_t> order_;
  int64_t epoch_ = 0;
  size_t at_ = 0;
  int64_t last_tokens_ = 0, last_pairs_ = 0;
};

// Mean cross-entropy per target token (nats) of `model`'s evaluation graph
// over `pairs`, in batches of rows of one pair each.
double mean_token_loss(TransformerEncDec& model, Session& session,
                       const std::vector<EncodedPair>& pairs);

// Translations of pairs' sources through the cached decoder (greedy for
// one beam, else beam search; models/encdec_decoder.h), decoded to text.
std::vector<std::string> translate_pairs(EncDecDecoder& decoder, Session& session,
                                         const Vocabulary& vocabulary,
                                         const std::vector<EncodedPair>& pairs,
                                         const BeamOptions& options);

}  // namespace mtf::models
