// BLEU and its 13a tokenization (models/bleu.h): the tokenizer's rules on
// the cases they exist for, scores worked out by hand, and bad input.
// (bleu.agrees_with_nltk checks whole corpora against NLTK.)
#include "models/bleu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "mtf/errors.h"

namespace mtf::models {
namespace {

using Tokens = std::vector<std::string>;

TEST(Bleu13aTokenizer, SplitsPunctuationButKeepsNumbersWordsAndApostrophes) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), (Tokens{"Hello", ",", "world", "!"}));
  EXPECT_EQ(tokenize_13a("It's 3.5% of $1,000.00"),
            (Tokens{"It's", "3.5", "%", "of", "$", "1,000.00"}));
  EXPECT_EQ(tokenize_13a("pages 12-14, well-known"),
            (Tokens{"pages", "12", "-", "14", ",", "well-known"}));
  EXPECT_EQ(tokenize_13a("U.S.A. e.g."),
            (Tokens{"U", ".", "S", ".", "A", ".", "e", ".", "g", "."}));
  EXPECT_EQ(tokenize_13a("end 5."), (Tokens{"end", "5", "."}));  // period after a digit, at the end
  EXPECT_EQ(tokenize_13a("&quot;a&quot; &amp; b&lt;c"),
            (Tokens{"\"", "a", "\"", "&", "b", "<", "c"}));
  EXPECT_EQ(tokenize_13a("dijo: «sí», año"), (Tokens{"dijo", ":", "«sí»", ",", "año"}));
  EXPECT_EQ(tokenize_13a("a\u00a0b\tc  d"), (Tokens{"a", "b", "c", "d"}));  // Unicode spaces
  EXPECT_EQ(tokenize_13a("x<skipped>y"), (Tokens{"xy"}));
  EXPECT_TRUE(tokenize_13a("   ").empty());
}

TEST(Bleu, IdenticalCorpusScoresOneHundredAndDisjointScoresZero) {
  const std::vector<std::string> text = {"the cat sat on the mat .", "a dog ran far away"};
  EXPECT_DOUBLE_EQ(corpus_bleu_13a(text, text).bleu, 100.0);
  const BleuScore none = corpus_bleu_13a({"x y z w v"}, {"a b c d e"});
  EXPECT_EQ(none.bleu, 0.0);
  EXPECT_EQ(none.matches[0], 0);
}

TEST(Bleu, HandWorkedScore) {
  // hyp: a b c d e f (6), ref: a b c d x f g (7).
  // 1-grams 5/6, 2-grams 3/5 (ab bc cd), 3-grams 2/4, 4-grams 1/3;
  // BP = exp(1 - 7/6).
  const BleuScore s =
      corpus_bleu({{"a", "b", "c", "d", "e", "f"}}, {{{"a", "b", "c", "d", "x", "f", "g"}}});
  const double want = 100 * std::exp(1.0 - 7.0 / 6.0) *
                      std::exp(0.25 * (std::log(5.0 / 6) + std::log(3.0 / 5) + std::log(2.0 / 4) +
                                       std::log(1.0 / 3)));
  EXPECT_NEAR(s.bleu, want, 1e-12);
  EXPECT_EQ(s.matches[1], 3);
  EXPECT_EQ(s.totals[3], 3);
  EXPECT_EQ(s.hypothesis_length, 6);
  EXPECT_EQ(s.reference_length, 7);
}

TEST(Bleu, ClipsRepeatsAndPicksTheClosestReferenceLength) {
  // "the the the" against "the cat": unigram matches clipped to 1.
  const BleuScore clipped = corpus_bleu({{"the", "the", "the"}}, {{{"the", "cat"}}});
  EXPECT_EQ(clipped.matches[0], 1);
  EXPECT_EQ(clipped.totals[0], 3);
  // References of 2 and 4 tokens for a 3-token hypothesis: a tie, the shorter.
  const BleuScore tie = corpus_bleu({{"a", "b", "c"}}, {{{"a", "b"}, {"a", "b", "c", "d"}}});
  EXPECT_EQ(tie.reference_length, 2);
}

TEST(Bleu, BadInputIsAClearError) {
  EXPECT_THROW(corpus_bleu_13a({"a", "b"}, {"a"}), ValueError);
  EXPECT_THROW(corpus_bleu({{"a"}}, {{}}), ValueError);
}

}  // namespace
}  // namespace mtf::models
