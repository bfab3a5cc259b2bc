// bleu.h — corpus BLEU for translations, with the 13a tokenization.
//
// tokenize_13a splits a line as mteval-v13a (and sacrebleu's "13a") does:
// it drops "<skipped>", joins "-\n" line breaks, unescapes &quot; &amp; &lt;
// &gt;, puts spaces around ASCII punctuation and symbols (not the
// apostrophe, the hyphen, the period or the comma), around a period or comma
// unless a digit precedes or follows it, after a hyphen that follows a
// digit, and splits at whitespace. Bytes outside ASCII (UTF-8 letters such
// as "ñ") stay inside their words.
//
// corpus_bleu is Papineni et al.'s BLEU over a whole corpus of tokenized
// hypotheses: n-gram precisions for n = 1..4 with each hypothesis n-gram's
// count clipped to its largest count in one reference, summed over the
// corpus, their geometric mean times the brevity penalty exp(1 - r/c) when
// the hypotheses' length c is below the references' r (for each hypothesis
// the reference length closest to its own, the shorter on a tie). It
// follows NLTK's corpus_bleu exactly (tests compare the two), including its
// one quirk: a hypothesis shorter than n counts 1 in the n-gram precision's
// denominator. Without smoothing, a corpus with no matching n-gram of some
// order scores 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtf::models {

std::vector<std::string> tokenize_13a(const std::string& line);

struct BleuScore {
  double bleu = 0;                      // 0..100
  double precisions[4] = {0, 0, 0, 0};  // matches / n-grams, per order
  int64_t matches[4] = {0, 0, 0, 0};
  int64_t totals[4] = {0, 0, 0, 0};
  double brevity_penalty = 0;
  int64_t hypothesis_length = 0, reference_length = 0;
  // "BLEU = 23.41 (56.2/29.8/17.1/10.0, BP 0.973, 1203/1236 tokens)"
  std::string to_string() const;
};

// Tokenized hypotheses, each with one or more tokenized references.
// ValueError when the counts differ or a hypothesis has no reference.
BleuScore corpus_bleu(const std::vector<std::vector<std::string>>& hypotheses,
                      const std::vector<std::vector<std::vector<std::string>>>& references);

// Lines of text, one reference each, tokenized with tokenize_13a.
BleuScore corpus_bleu_13a(const std::vector<std::string>& hypotheses,
                          const std::vector<std::string>& references);

}  // namespace mtf::models
