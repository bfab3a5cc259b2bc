#include "models/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "mtf/errors.h"

namespace mtf::models {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// mteval's punctuation class: { | } ~, [ \ ] ^ _ `, space ! " # $ % &,
// ( ) * +, : ; < = > ? @, and /.
bool is_13a_symbol(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return (u >= '{' && u <= '~') || (u >= '[' && u <= '`') || (u >= ' ' && u <= '&') ||
         (u >= '(' && u <= '+') || (u >= ':' && u <= '@') || u == '/';
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// One left-to-right pass of a two-character rule, as a regular expression
// substitution makes it: where first(s[i]) and second(s[i + 1]), the pair is
// rewritten and the scan resumes after it.
template <typename First, typename Second, typename Rewrite>
std::string pair_pass(const std::string& s, First first, Second second, Rewrite rewrite) {
  std::string out;
  out.reserve(s.size() * 2);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      rewrite(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// The length in bytes of the whitespace character (as Python's str.split
// sees it: ASCII's, the separators \x1c-\x1f and Unicode's spaces, in
// UTF-8) that starts at s[i], or 0.
size_t whitespace_at(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned c = b(i);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c == 0xc2 && (b(i + 1) == 0x85 || b(i + 1) == 0xa0)) return 2;  // U+0085, U+00A0
  if (c == 0xe1 && b(i + 1) == 0x9a && b(i + 2) == 0x80) return 3;    // U+1680
  if (c == 0xe2 && b(i + 1) == 0x80) {
    const unsigned d = b(i + 2);
    if (d <= 0x8a || d == 0xa8 || d == 0xa9 || d == 0xaf)
      return 3;  // U+2000-200A, 2028, 2029, 202F
  }
  if (c == 0xe2 && b(i + 1) == 0x81 && b(i + 2) == 0x9f) return 3;  // U+205F
  if (c == 0xe3 && b(i + 1) == 0x80 && b(i + 2) == 0x80) return 3;  // U+3000
  return 0;
}

bool is_period_or_comma(char c) { return c == '.' || c == ','; }
bool not_digit(char c) { return !is_digit(c); }

}  // namespace

std::vector<std::string> tokenize_13a(const std::string& line) {
  std::string s = line;
  replace_all(s, "<skipped>", "");
  replace_all(s, "-\n", "");
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.find('&') != std::string::npos) {
    replace_all(s, "&quot;", "\"");
    replace_all(s, "&amp;", "&");
    replace_all(s, "&lt;", "<");
    replace_all(s, "&gt;", ">");
  }
  s = " " + s + " ";
  std::string spaced;
  spaced.reserve(s.size() * 2);
  for (char c : s) {
    if (is_13a_symbol(c)) {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  // A period or comma not preceded by a digit, then one not followed by a
  // digit, then a hyphen after a digit.
  spaced = pair_pass(spaced, not_digit, is_period_or_comma, [](std::string& o, char a, char b) {
    o += a;
    o += ' ';
    o += b;
    o += ' ';
  });
  spaced = pair_pass(spaced, is_period_or_comma, not_digit, [](std::string& o, char a, char b) {
    o += ' ';
    o += a;
    o += ' ';
    o += b;
  });
  spaced = pair_pass(
      spaced, is_digit, [](char c) { return c == '-'; },
      [](std::string& o, char a, char b) {
        o += a;
        o += ' ';
        o += b;
        o += ' ';
      });
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < spaced.size()) {
    while (i < spaced.size() && whitespace_at(spaced, i) > 0) i += whitespace_at(spaced, i);
    size_t j = i;
    while (j < spaced.size() && whitespace_at(spaced, j) == 0) ++j;
    if (j > i) tokens.push_back(spaced.substr(i, j - i));
    i = j;
  }
  return tokens;
}

std::string BleuScore::to_string() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "BLEU = %.2f (%.1f/%.1f/%.1f/%.1f, BP %.3f, %lld/%lld tokens)",
                bleu, 100 * precisions[0], 100 * precisions[1], 100 * precisions[2],
                100 * precisions[3], brevity_penalty, static_cast<long long>(hypothesis_length),
                static_cast<long long>(reference_length));
  return buf;
}

BleuScore corpus_bleu(const std::vector<std::vector<std::string>>& hypotheses,
                      const std::vector<std::vector<std::vector<std::string>>>& references) {
  if (hypotheses.size() != references.size()) {
    throw ValueError("corpus_bleu: " + std::to_string(hypotheses.size()) + " hypotheses but " +
                     std::to_string(references.size()) +
                     " sets of references; give one set (one or more references) per hypothesis");
  }
  BleuScore s;
  using Ngram = std::vector<std::string>;
  for (size_t h = 0; h < hypotheses.size(); ++h) {
    const std::vector<std::string>& hyp = hypotheses[h];
    const auto& refs = references[h];
    if (refs.empty()) {
      throw ValueError("corpus_bleu: hypothesis " + std::to_string(h) +
                       " has no reference; give at least one");
    }
    for (int n = 1; n <= 4; ++n) {
      std::map<Ngram, int64_t> counts;
      for (size_t i = 0; i + n <= hyp.size(); ++i)
        ++counts[Ngram(hyp.begin() + i, hyp.begin() + i + n)];
      std::map<Ngram, int64_t> most;  // largest count in one reference
      for (const auto& ref : refs) {
        std::map<Ngram, int64_t> rc;
        for (size_t i = 0; i + n <= ref.size(); ++i)
          ++rc[Ngram(ref.begin() + i, ref.begin() + i + n)];
        for (const auto& [g, c] : rc) most[g] = std::max(most[g], c);
      }
      int64_t matched = 0, total = 0;
      for (const auto& [g, c] : counts) {
        total += c;
        auto it = most.find(g);
        if (it != most.end()) matched += std::min(c, it->second);
      }
      s.matches[n - 1] += matched;
      s.totals[n - 1] += std::max<int64_t>(1, total);  // NLTK's: at least 1 a hypothesis
    }
    const int64_t c = static_cast<int64_t>(hyp.size());
    int64_t closest = static_cast<int64_t>(refs[0].size());
    for (const auto& ref : refs) {
      const int64_t r = static_cast<int64_t>(ref.size());
      if (std::llabs(r - c) < std::llabs(closest - c) ||
          (std::llabs(r - c) == std::llabs(closest - c) && r < closest))
        closest = r;
    }
    s.hypothesis_length += c;
    s.reference_length += closest;
  }
  for (int n = 0; n < 4; ++n)
    s.precisions[n] = s.totals[n] > 0 ? static_cast<double>(s.matches[n]) / s.totals[n] : 0.0;
  const double c = static_cast<double>(s.hypothesis_length),
               r = static_cast<double>(s.reference_length);
  s.brevity_penalty = c > r ? 1.0 : (c == 0 ? 0.0 : std::exp(1.0 - r / c));
  bool all_matched = true;
  for (int n = 0; n < 4; ++n) all_matched = all_matched && s.matches[n] > 0;
  if (!all_matched) return s;  // bleu 0: some order has no match (no smoothing)
  double log_sum = 0;
  for (int n = 0; n < 4; ++n) log_sum += 0.25 * std::log(s.precisions[n]);
  s.bleu = 100.0 * s.brevity_penalty * std::exp(log_sum);
  return s;
}

BleuScore corpus_bleu_13a(const std::vector<std::string>& hypotheses,
                          const std::vector<std::string>& references) {
  if (hypotheses.size() != references.size()) {
    throw ValueError("corpus_bleu: " + std::to_string(hypotheses.size()) + " hypotheses but " +
                     std::to_string(references.size()) + " references; give one a hypothesis");
  }
  std::vector<std::vector<std::string>> hyps;
  std::vector<std::vector<std::vector<std::string>>> refs;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    hyps.push_back(tokenize_13a(hypotheses[i]));
    refs.push_back({tokenize_13a(references[i])});
  }
  return corpus_bleu(hyps, refs);
}

}  // namespace mtf::models
