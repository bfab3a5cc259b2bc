// encdec_decoder.h — incremental decoding for TransformerEncDec: graphs,
// added to the model's graph and sharing its variables, that encode a batch
// of sources once and then decode one target position a step.
//
// encode() runs the encoder over the sources and keeps, per decoder layer,
// the encoder-decoder attention's keys and values (and the sources' padding
// mask) as state: computed once per sentence, not once per step — and, for
// a decoder made for `beams` sequences per sentence, not once per beam: its
// encoder runs over batch / beams sentences and each sentence's keys and
// values are copied into its beams' rows. Each step
// then feeds one token per sequence at a position, attends over the
// self-attention caches (which it extends) and the encoded sources, and
// returns the next token's logits. The caches are non-trainable variables
// laid out like any tensor (heads split over a mesh axis keep their caches
// split). A sequence is the start id 0 followed by the translation, so
// length() is targets_length + 1; padding (0) is never a choice: its logit
// is -inf. Beam search (beam_search.h) reorders the self-attention caches
// between steps, among the sequences of one source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/beam_search.h"
#include "models/incremental_decoder.h"
#include "models/transformer_blocks.h"
#include "models/transformer_encdec.h"

namespace mtf::models {

class EncDecDecoder : public IncrementalDecoder {
 public:
  // A decoder of `batch` sequences for `model` (made before the Session,
  // which creates the caches). The sequences' dimension is named
  // `batch_name`: "batch" lays them out as the training batch; another name
  // keeps them whole where the mesh cannot split them evenly. beams > 1
  // (a divisor of batch) adds the encoding of batch / beams sentences, each
  // shared by `beams` consecutive sequences; their dimension is named
  // `<batch_name>_sentences` (split only where the layout names it).
  EncDecDecoder(TransformerEncDec& model, int64_t batch, const std::string& batch_name = "batch",
                int64_t beams = 1);

  Dimension batch;

  // Encoding: int32 [batch, inputs_length], one source a row padded with 0;
  // encode_ops fill the encoder-decoder caches and the padding mask.
  Tensor source;
  std::vector<Operation*> encode_ops;
  // With beams > 1, the same from int32 [sentences, inputs_length]: sentence
  // s fills rows s * beams .. (s + 1) * beams - 1.
  Dimension sentences;
  Tensor sentence_source;
  std::vector<Operation*> encode_sentence_ops;
  // One step: int32 [batch] tokens at int32 [] position; logits [batch,
  // vocab] (float32); write_caches write the position's keys and values.
  Tensor token, position, logits;
  std::vector<Operation*> write_caches;
  // Reordering: sequence b takes over the self-attention caches of
  // parents[b] (int32 [batch]).
  Tensor parents;
  std::vector<Operation*> reorder_caches;

  // Encodes one source per sequence (ids; cut to inputs_length), or with
  // beams() > 1 one per sentence (batch / beams of them), the encoder then
  // running once per sentence. ValueError for another count or an id
  // outside the vocabulary.
  void encode(Session& session, const std::vector<std::vector<int32_t>>& sources);

  int64_t beams() const { return beams_; }
  int64_t batch_size() const override { return batch.size; }
  int64_t length() const override { return targets_ + 1; }
  int64_t vocab() const override { return vocab_; }
  const char* name() const override { return "EncDecDecoder"; }
  // Steps need encode() first (ValueError otherwise); positions 0 ..
  // targets_length - 1.
  std::vector<float> step(Session& session, const std::vector<int32_t>& tokens,
                          int64_t p) const override;
  // A step per prompt position (prompts are short: the start id 0 and
  // perhaps a forced prefix).
  std::vector<float> prefill(Session& session,
                             const std::vector<std::vector<int32_t>>& prompts) const override;
  // ValueError when a parent decodes another source than its child.
  void reorder(Session& session, const std::vector<int32_t>& parents) const override;

  // Every state variable (caches and mask): checkpoints of the model need
  // not hold them.
  const std::vector<Tensor>& caches() const { return caches_; }

 private:
  // The graph's pieces, in the order the constructor makes them: the
  // encoding (returns its caches: the padding bias, then k and v per
  // layer), one step over them (returns the self-attention caches), and
  // beam search's reordering of those.
  std::vector<Tensor> build_encoding(TransformerEncDec& model, const Blocks& blocks);
  std::vector<Tensor> build_step(TransformerEncDec& model, const Blocks& blocks,
                                 const std::vector<Tensor>& encoder_caches);
  void build_reordering(const std::vector<Tensor>& self_caches);
  // A zero-initialised, non-trainable state variable "<prefix><name>",
  // recorded in caches().
  Tensor state_variable(const Mesh& mesh, const std::string& name, const Shape& shape, DType dtype);
  // The ids of each source, cut to inputs_length (into `kept`), as a padded
  // int32 feed for `placeholder` (one row a source).
  HostTensor source_rows(const std::vector<std::vector<int32_t>>& sources,
                         const Tensor& placeholder, std::vector<std::vector<int32_t>>* kept) const;

  std::string prefix_;  // of the state variables' names
  std::vector<Tensor> caches_;
  std::vector<std::vector<int32_t>> encoded_;  // the source of each sequence encode() filled
  int64_t inputs_, targets_, vocab_, beams_;
};

// Translations of `sources` (SentencePiece ids; cut to inputs_length)
// through `decoder`, decoder.batch_size() / beams sentences at a time:
// greedy for options.beams == 1, else beam search with Mesh TensorFlow's
// length penalty (options.alpha); the end id 1 ends a translation. Returns
// each translation's ids without the start and the end. A decoder made for
// options.beams encodes each sentence once; another encodes it once per
// beam. ValueError when the decoder's batch is not a multiple of the beams.
std::vector<std::vector<int32_t>> translate(EncDecDecoder& decoder, Session& session,
                                            const std::vector<std::vector<int32_t>>& sources,
                                            const BeamOptions& options);

}  // namespace mtf::models
