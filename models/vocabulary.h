// vocabulary.h — SentencePiece subword vocabularies (Debian's
// libsentencepiece) for translation: trained once on a corpus's training
// sentences and cached, loaded, and fingerprinted so that a checkpoint can
// say which vocabulary it was trained with and refuse another.
//
// Ids follow Mesh TensorFlow's (T5's) convention: 0 is padding, 1 end of
// sentence, 2 unknown; there is no beginning-of-sentence id. Text is not
// normalized (SentencePiece's "identity" rule) beyond whitespace: runs of
// spaces become one and the ends are trimmed, so decode(encode(text)) gives
// the text back with its spaces tidied.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mtf::models {

class Vocabulary {
 public:
  static constexpr int32_t kPad = 0, kEos = 1, kUnk = 2;

  // IoError when the file cannot be read or is not a SentencePiece model.
  static Vocabulary load(const std::string& model_path);
  // From the bytes of a model file (ValueError when they are not one).
  static Vocabulary from_serialized(const std::string& model_proto);

  // Ids of the pieces of `text` (no end-of-sentence id added).
  std::vector<int32_t> encode(const std::string& text) const;
  // The text of `ids`; padding and end-of-sentence ids are skipped.
  std::string decode(const std::vector<int32_t>& ids) const;
  int64_t size() const;
  // The piece an id stands for ("▁the"); ValueError outside [0, size).
  std::string piece(int32_t id) const;

  // "spm<size>-<16 hex digits>": the size and a 64-bit hash of the model's
  // bytes. A checkpoint records it; two vocabularies with the same
  // fingerprint encode every text alike.
  const std::string& fingerprint() const { return fingerprint_; }
  const std::string& serialized() const { return serialized_; }
  // ValueError, naming `where` and both fingerprints, unless `recorded` is
  // this vocabulary's.
  void check_matches(const std::string& recorded, const std::string& where) const;

 private:
  Vocabulary() = default;
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor_;
  std::string serialized_, fingerprint_;
};

struct VocabularyOptions {
  int64_t size = 8000;
  std::string model_type = "unigram";  // or "bpe"
  // At most this many sentences are trained on (0: all), taken evenly.
  int64_t max_sentences = 0;
};

// Trains a vocabulary on `sentences` (a joint vocabulary: give both sides).
// ValueError for no sentences or a size SentencePiece cannot reach on them.
Vocabulary train_vocabulary(const std::vector<std::string>& sentences,
                            const VocabularyOptions& options);

// train_vocabulary, cached: `cache_dir` keeps each trained model in a file
// named by a hash of the sentences and the options; a later call with the
// same ones loads it instead of training again. The directory is made when
// missing; the file is written whole (a temporary renamed) or not at all.
Vocabulary cached_vocabulary(const std::vector<std::string>& sentences,
                             const VocabularyOptions& options, const std::string& cache_dir);

}  // namespace mtf::models
