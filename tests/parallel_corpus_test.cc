// Sentence pairs for translation (models/parallel_corpus.h): the TSV reader
// and writer with their errors, OSIS markup to plain text, the split, and
// the English-Spanish Bible read through libsword.
#include "models/parallel_corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "mtf/errors.h"

namespace mtf::models {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mtf_parallel_corpus_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ParallelCorpus, TsvRoundTripsAndAcceptsCrLf) {
  const std::string path = temp_path("round.tsv");
  const std::vector<SentencePair> pairs = {{"", "In the beginning.", "En el principio."},
                                           {"", "¿Dónde?", "Where?"}};
  write_tsv_pairs(path, pairs);
  const std::vector<SentencePair> back = read_tsv_pairs(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].source, "¿Dónde?");
  EXPECT_EQ(back[1].target, "Where?");
  EXPECT_EQ(back[1].key, path + ":2");
  write_file(path, "a\tb\r\nc\td");  // Windows endings, no final newline
  const std::vector<SentencePair> crlf = read_tsv_pairs(path);
  ASSERT_EQ(crlf.size(), 2u);
  EXPECT_EQ(crlf[0].target, "b");
  EXPECT_EQ(crlf[1].target, "d");
  std::filesystem::remove(path);
}

TEST(ParallelCorpus, BadTsvLinesAreNamedWithTheirLineNumber) {
  const std::string path = temp_path("bad.tsv");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\tb\n\nc\td\n", ":2: empty line"},      {"a\tb\nno tab here\n", ":2: no tab"},
      {"a\tb\tc\n", ":1: more than one tab"},    {"  \tb\n", ":1: the source side is empty"},
      {"a\t\n", ":1: the target side is empty"},
  };
  for (const auto& [text, want] : cases) {
    write_file(path, text);
    try {
      read_tsv_pairs(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(path + want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("source<TAB>target"), std::string::npos);
    }
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_tsv_pairs(path), IoError);
  EXPECT_THROW(write_tsv_pairs(path, {{"k", "a\tb", "c"}}), ValueError);
}

TEST(ParallelCorpus, OsisMarkupBecomesPlainText) {
  // Genesis 1:1 and Matthew 5:3 as the World English Bible module stores them.
  const std::string genesis =
      "<w lemma=\"strong:H0430\">In</w> <w lemma=\"strong:H0853\">the</w> "
      "<w lemma=\"strong:H7225\">beginning</w>, <w lemma=\"strong:H0430\">God</w><note "
      "placement=\"foot\"><reference type=\"annotateRef\">1:1 </reference>The Hebrew word "
      "rendered “God” is “אֱלֹהִ֑ים” (Elohim).</note><w lemma=\"strong:H1254\">created</w> "
      "<w lemma=\"strong:H0853\">the</w> <w lemma=\"strong:H8064\">heavens</w> "
      "<w lemma=\"strong:H0430\">and</w> <w lemma=\"strong:H0853\">the</w> "
      "<w lemma=\"strong:H0776\">earth</w>.";
  EXPECT_EQ(osis_to_plain_text(genesis),
            "In the beginning, God created the heavens and the earth.");
  const std::string matthew =
      "<div type=\"x-milestone\" subType=\"x-preverse\" sID=\"pv13808\"/><lg sID=\"gen30354\"/> "
      "<l level=\"1\" sID=\"gen30355\"/> <q marker=\"\" who=\"Jesus\">“<w "
      "lemma=\"strong:G3107\">Blessed</w> <w lemma=\"strong:G1510\">are</w> the poor in "
      "spirit,</q> <l eID=\"gen30355\" level=\"1\"/> <q marker=\"\" who=\"Jesus\">for theirs is "
      "the Kingdom of Heaven.</q> <note type=\"crossReference\"> <reference subType=\"x-origin\" "
      "type=\"annotateRef\">5:3 </reference> <reference>Isaiah 57:15; 66:2</reference> </note>  "
      "<l eID=\"gen30357\" level=\"2\"/>";
  EXPECT_EQ(osis_to_plain_text(matthew),
            "“Blessed are the poor in spirit, for theirs is the Kingdom of Heaven.");
  EXPECT_EQ(osis_to_plain_text("<title type=\"psalm\">A Psalm.</title>Fish &amp; chips&#33; "
                               "&#xF1;o &bogus; a<note>x</note>, b"),
            "Fish & chips! ño &bogus; a, b");
  EXPECT_EQ(osis_to_plain_text("   "), "");
}

TEST(ParallelCorpus, SplitIsDisjointDeterministicAndKeepsRepeatsTogether) {
  std::vector<SentencePair> pairs;
  for (int i = 0; i < 5000; ++i)
    pairs.push_back({"k" + std::to_string(i), "sentence number " + std::to_string(i % 4000), "t"});
  const CorpusSplit a = split_corpus(pairs, 50, 50), b = split_corpus(pairs, 50, 50);
  EXPECT_EQ(a.train.size() + a.dev.size() + a.test.size(), pairs.size());
  EXPECT_EQ(a.test.size(), b.test.size());
  for (size_t i = 0; i < a.test.size(); ++i) EXPECT_EQ(a.test[i].key, b.test[i].key);
  // About 5% each (binomial: 250 +- 3 sigma of 15).
  EXPECT_NEAR(static_cast<double>(a.test.size()), 250, 50);
  EXPECT_NEAR(static_cast<double>(a.dev.size()), 250, 50);
  std::set<std::string> train_sources;
  for (const SentencePair& p : a.train) train_sources.insert(p.source);
  for (const SentencePair& p : a.test) EXPECT_EQ(train_sources.count(p.source), 0u) << p.source;
  for (const SentencePair& p : a.dev) EXPECT_EQ(train_sources.count(p.source), 0u) << p.source;
  // Whitespace does not move a sentence to another split.
  const CorpusSplit spaced = split_corpus({{"x", "  sentence   number 7 ", "t"}}, 500, 500);
  const CorpusSplit plain = split_corpus({{"x", "sentence number 7", "t"}}, 500, 500);
  EXPECT_EQ(spaced.test.size(), plain.test.size());
  EXPECT_THROW(split_corpus(pairs, 600, 500), ValueError);
  EXPECT_THROW(split_corpus(pairs, -1, 5), ValueError);
}

#ifdef MTF_HAVE_SWORD
TEST(ParallelCorpus, ReadsTheEnglishSpanishBibleVerseByVerse) {
  const std::vector<SentencePair> sample =
      read_sword_pairs(kEnglishWebModule, kSpanishRv1909Module, "/usr/share/sword", 200);
  ASSERT_EQ(sample.size(), 200u);
  EXPECT_EQ(sample[0].key, "Genesis 1:1");
  EXPECT_EQ(sample[0].source, "In the beginning, God created the heavens and the earth.");
  EXPECT_EQ(sample[0].target, "EN el principio crió Dios los cielos y la tierra.");
  std::set<std::string> keys;
  for (const SentencePair& p : sample) {
    EXPECT_TRUE(keys.insert(p.key).second) << p.key;
    for (const std::string* side : {&p.source, &p.target}) {
      EXPECT_EQ(side->find('<'), std::string::npos) << p.key << ": " << *side;
      EXPECT_FALSE(side->empty()) << p.key;
    }
  }
  EXPECT_THROW(read_sword_pairs("noSuchModule", kSpanishRv1909Module), IoError);
  EXPECT_THROW(read_sword_pairs(kEnglishWebModule, kSpanishRv1909Module, "/nonexistent"), IoError);
}

TEST(ParallelCorpus, TheWholeCorpusAlignsAboutThirtyOneThousandVerses) {
  const std::vector<SentencePair> all = read_sword_pairs(kEnglishWebModule, kSpanishRv1909Module);
  EXPECT_GT(all.size(), 30500u);
  EXPECT_LT(all.size(), 31500u);
  const CorpusSplit split = split_corpus(all);
  EXPECT_GT(split.test.size(), 450u);
  EXPECT_GT(split.dev.size(), 450u);
}
#else
TEST(ParallelCorpus, WithoutLibswordTheReaderSaysWhatToInstall) {
  try {
    read_sword_pairs(kEnglishWebModule, kSpanishRv1909Module);
    ADD_FAILURE() << "read without libsword";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("libsword-dev"), std::string::npos);
  }
}
#endif

}  // namespace
}  // namespace mtf::models
