#include "models/vocabulary.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "models/fnv1a.h"
#include "mtf/errors.h"

namespace mtf::models {
namespace {

std::string hex16(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The sentences SentencePiece trains on: every `stride`-th of a vector.
class Sentences : public sentencepiece::SentenceIterator {
 public:
  Sentences(const std::vector<std::string>& all, size_t stride) : all_(all), stride_(stride) {}
  bool done() const override { return at_ >= all_.size(); }
  void Next() override { at_ += stride_; }
  const std::string& value() const override { return all_[at_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& all_;
  size_t stride_, at_ = 0;
};

size_t stride_for(const std::vector<std::string>& sentences, const VocabularyOptions& o) {
  if (o.max_sentences <= 0 || static_cast<int64_t>(sentences.size()) <= o.max_sentences) return 1;
  return (sentences.size() + o.max_sentences - 1) / o.max_sentences;
}

}  // namespace

Vocabulary Vocabulary::from_serialized(const std::string& model_proto) {
  auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(model_proto);
  if (!status.ok())
    throw ValueError("not a SentencePiece model (" + std::string(status.ToString()) + ")");
  Vocabulary v;
  v.processor_ = std::move(processor);
  v.serialized_ = model_proto;
  v.fingerprint_ = "spm" + std::to_string(v.size()) + "-" + hex16(fnv1a(model_proto));
  return v;
}

Vocabulary Vocabulary::load(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw IoError("cannot open the vocabulary " + model_path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  try {
    return from_serialized(bytes.str());
  } catch (const ValueError& e) {
    throw IoError(model_path + " is " + e.what());
  }
}

std::vector<int32_t> Vocabulary::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw ValueError("cannot encode text: " + std::string(status.ToString()));
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string Vocabulary::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> kept;
  for (int32_t id : ids) {
    if (id == kPad || id == kEos) continue;
    if (id < 0 || id >= size())
      throw ValueError("id " + std::to_string(id) + " is outside the vocabulary of " +
                       std::to_string(size()) + " pieces");
    kept.push_back(id);
  }
  std::string text;
  const auto status = processor_->Decode(kept, &text);
  if (!status.ok()) throw ValueError("cannot decode ids: " + std::string(status.ToString()));
  return text;
}

int64_t Vocabulary::size() const { return processor_->GetPieceSize(); }

std::string Vocabulary::piece(int32_t id) const {
  if (id < 0 || id >= size())
    throw ValueError("id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(size()) + " pieces");
  return processor_->IdToPiece(id);
}

void Vocabulary::check_matches(const std::string& recorded, const std::string& where) const {
  if (recorded == fingerprint_) return;
  throw ValueError(where + " was trained with vocabulary " +
                   (recorded.empty() ? std::string("(none recorded)") : recorded) +
                   ", not this one (" + fingerprint_ +
                   "): its ids would mean other pieces; use the vocabulary it was trained with");
}

Vocabulary train_vocabulary(const std::vector<std::string>& sentences,
                            const VocabularyOptions& options) {
  if (sentences.empty()) throw ValueError("train_vocabulary: no sentences to train on");
  if (options.size < 4)
    throw ValueError("train_vocabulary: a vocabulary needs at least 4 pieces, not " +
                     std::to_string(options.size));
  if (options.model_type != "unigram" && options.model_type != "bpe")
    throw ValueError("train_vocabulary: model type must be unigram or bpe, not \"" +
                     options.model_type + "\"");
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::string args = "--model_type=" + options.model_type +
                           " --vocab_size=" + std::to_string(options.size) +
                           " --character_coverage=1.0 --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1"
                           " --normalization_rule_name=identity --input_sentence_size=0"
                           " --shuffle_input_sentence=false --minloglevel=2 --num_threads=" +
                           std::to_string(threads);
  Sentences input(sentences, stride_for(sentences, options));
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &input, &model);
  if (!status.ok()) {
    throw ValueError("SentencePiece could not train a vocabulary of " +
                     std::to_string(options.size) + " pieces on " +
                     std::to_string(sentences.size()) + " sentences (" +
                     std::string(status.ToString()) + "); try a smaller size");
  }
  return Vocabulary::from_serialized(model);
}

Vocabulary cached_vocabulary(const std::vector<std::string>& sentences,
                             const VocabularyOptions& options, const std::string& cache_dir) {
  uint64_t h = fnv1a(options.model_type + "/" + std::to_string(options.size) + "/" +
                     std::to_string(options.max_sentences));
  for (const std::string& s : sentences) h = fnv1a(s + '\n', h);
  const std::string path =
      cache_dir + "/spm" + std::to_string(options.size) + "-" + hex16(h) + ".model";
  if (std::filesystem::is_regular_file(path)) return Vocabulary::load(path);
  Vocabulary v = train_vocabulary(sentences, options);
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) throw IoError("cannot make the vocabulary cache " + cache_dir + ": " + ec.message());
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << v.serialized();
    out.flush();
    if (!out) throw IoError("cannot write the vocabulary " + tmp + " (disk full?)");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return v;
}

}  // namespace mtf::models
