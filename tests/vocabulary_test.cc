// SentencePiece vocabularies (models/vocabulary.h): trained on a small
// sample made here, round trips, the cache, fingerprints and their refusal,
// and bad input.
#include "models/vocabulary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mtf/errors.h"

namespace mtf::models {
namespace {

// English and Spanish sentences made from a few hundred words, enough for a
// vocabulary of a few hundred pieces.
std::vector<std::string> sample_sentences(int n) {
  const std::vector<std::string> words = {
      "the",     "earth",    "was",         "formless", "and",       "empty",  "darkness",
      "on",      "surface",  "of",          "deep",     "God's",     "Spirit", "waters",
      "said",    "let",      "there",       "be",       "light",     "y",      "la",
      "tierra",  "estaba",   "desordenada", "vacía",    "tinieblas", "sobre",  "haz",
      "abismo",  "Espíritu", "Dios",        "se",       "movía",     "aguas",  "dijo",
      "sea",     "luz",      "año",         "niño",     "corazón",   "él",     "también",
      "¿dónde?", "«así»"};
  std::vector<std::string> out;
  uint32_t state = 7;
  for (int i = 0; i < n; ++i) {
    std::string s;
    const int len = 4 + static_cast<int>(i % 12);
    for (int w = 0; w < len; ++w) {
      state = state * 1664525u + 1013904223u;
      s += (w ? " " : "") + words[(state >> 8) % words.size()];
    }
    out.push_back(s + ".");
  }
  return out;
}

std::string temp_dir(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mtf_vocabulary_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(Vocabulary, TrainsAndRoundTripsText) {
  VocabularyOptions o;
  o.size = 120;
  const Vocabulary v = train_vocabulary(sample_sentences(2000), o);
  EXPECT_EQ(v.size(), 120);
  EXPECT_EQ(v.piece(Vocabulary::kPad), "<pad>");
  EXPECT_EQ(v.piece(Vocabulary::kEos), "</s>");
  EXPECT_EQ(v.piece(Vocabulary::kUnk), "<unk>");
  for (const std::string& text :
       {std::string("the earth was formless y vacía."), std::string("¿dónde? «así» dijo Dios."),
        std::string("tierra  del   niño ")}) {
    const std::vector<int32_t> ids = v.encode(text);
    ASSERT_FALSE(ids.empty());
    for (int32_t id : ids) {
      EXPECT_GE(id, 3);  // never padding, end or (for these letters) unknown
      EXPECT_LT(id, v.size());
    }
    // Spaces tidied, every character kept.
    std::string tidy;
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] != ' ' || (!tidy.empty() && tidy.back() != ' ')) tidy += text[i];
    while (!tidy.empty() && tidy.back() == ' ') tidy.pop_back();
    EXPECT_EQ(v.decode(ids), tidy);
    std::vector<int32_t> padded = ids;
    padded.push_back(Vocabulary::kEos);
    padded.push_back(Vocabulary::kPad);
    EXPECT_EQ(v.decode(padded), tidy);  // end and padding are not text
  }
  EXPECT_THROW(v.decode({5, static_cast<int32_t>(v.size())}), ValueError);
  EXPECT_THROW(v.piece(-1), ValueError);
}

TEST(Vocabulary, CacheTrainsOnceAndFingerprintsTellVocabulariesApart) {
  const std::string dir = temp_dir("cache");
  VocabularyOptions o;
  o.size = 100;
  const std::vector<std::string> sentences = sample_sentences(1500);
  const Vocabulary first = cached_vocabulary(sentences, o, dir);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().extension(), ".model");
  }
  EXPECT_EQ(files, 1u);
  const Vocabulary again = cached_vocabulary(sentences, o, dir);
  EXPECT_EQ(again.fingerprint(), first.fingerprint());
  EXPECT_EQ(again.serialized(), first.serialized());
  first.check_matches(again.fingerprint(), "checkpoint ckpt-10.h5");
  // Another size is another vocabulary, refused by name.
  o.size = 90;
  const Vocabulary other = cached_vocabulary(sentences, o, dir);
  EXPECT_NE(other.fingerprint(), first.fingerprint());
  try {
    first.check_matches(other.fingerprint(), "checkpoint ckpt-10.h5");
    ADD_FAILURE() << "another vocabulary was accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ckpt-10.h5"), std::string::npos) << msg;
    EXPECT_NE(msg.find(other.fingerprint()), std::string::npos) << msg;
    EXPECT_NE(msg.find(first.fingerprint()), std::string::npos) << msg;
  }
  std::filesystem::remove_all(dir);
}

TEST(Vocabulary, BadInputIsAClearError) {
  VocabularyOptions o;
  EXPECT_THROW(train_vocabulary({}, o), ValueError);
  o.size = 50000;  // more pieces than a small sample can give
  EXPECT_THROW(train_vocabulary(sample_sentences(50), o), ValueError);
  o.size = 100;
  o.model_type = "wordpiece";
  EXPECT_THROW(train_vocabulary(sample_sentences(50), o), ValueError);
  const std::string dir = temp_dir("bad");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/junk.model") << "not a model";
  EXPECT_THROW(Vocabulary::load(dir + "/junk.model"), IoError);
  EXPECT_THROW(Vocabulary::load(dir + "/missing.model"), IoError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mtf::models
