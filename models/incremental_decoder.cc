#include "models/incremental_decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace mtf::models {

void SamplingOptions::validate(int64_t vocab) const {
  if (!(temperature >= 0))
    throw ValueError("sampling: temperature must be >= 0, got " + std::to_string(temperature));
  if (top_k < 0) throw ValueError("sampling: top_k must be >= 0, got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1))
    throw ValueError("sampling: top_p must be in (0, 1], got " + std::to_string(top_p));
  if (stop < -1 || stop >= vocab) {
    throw ValueError("sampling: stop token " + std::to_string(stop) +
                     " is outside the vocabulary of " + std::to_string(vocab) + " (-1: none)");
  }
}

int32_t choose_next(const float* row, int64_t vocab, const SamplingOptions& o,
                    std::mt19937_64& rng) {
  const int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  if (o.temperature == 0) return best;
  // Ids by decreasing logit (ties: lower id first), cut to top_k.
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  if (o.top_k > 0 && o.top_k < vocab) ids.resize(o.top_k);
  std::vector<double> p(ids.size());
  double z = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    z += p[i] = std::exp((double(row[ids[i]]) - row[best]) / o.temperature);
  // The nucleus: the fewest highest whose probability reaches top_p.
  size_t keep = ids.size();
  if (o.top_p < 1) {
    double mass = 0;
    for (keep = 0; keep < ids.size();) {
      mass += p[keep++] / z;
      if (mass >= o.top_p) break;
    }
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[i];
  double u = std::uniform_real_distribution<double>(0, total)(rng);
  for (size_t i = 0; i + 1 < keep; ++i)
    if ((u -= p[i]) < 0) return ids[i];
  return ids[keep - 1];
}

namespace {

// ValueError naming `what` and the token for a token outside the vocabulary.
void check_tokens(const std::vector<int32_t>& tokens, int64_t vocab, const std::string& what) {
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      throw ValueError(what + std::to_string(t) + " is outside the vocabulary of " +
                       std::to_string(vocab));
    }
  }
}

}  // namespace

void IncrementalDecoder::check_prompts(const std::vector<std::vector<int32_t>>& prompts,
                                       const char* who) const {
  const std::string where = std::string(name()) + "::" + who + ": ";
  if (static_cast<int64_t>(prompts.size()) != batch_size()) {
    throw ValueError(where + std::to_string(prompts.size()) + " prompts for a batch of " +
                     std::to_string(batch_size()) + " (one prompt per sequence)");
  }
  const size_t n = prompts[0].size();
  for (const auto& p : prompts) {
    if (p.empty() || p.size() != n) throw ValueError(where + "prompts must share one length >= 1");
    check_tokens(p, vocab(), where + "prompt token ");
  }
  if (static_cast<int64_t>(n) > length()) {
    throw ValueError(where + "a prompt of " + std::to_string(n) +
                     " tokens exceeds the model's length " + std::to_string(length()));
  }
}

void IncrementalDecoder::check_step(const std::vector<int32_t>& tokens, int64_t p,
                                    const char* who) const {
  const std::string where = std::string(name()) + "::" + who + ": ";
  if (static_cast<int64_t>(tokens.size()) != batch_size()) {
    throw ValueError(where + std::to_string(tokens.size()) + " tokens for a batch of " +
                     std::to_string(batch_size()));
  }
  if (p < 0 || p >= length()) {
    throw ValueError(where + "position " + std::to_string(p) + " is outside the model's length " +
                     std::to_string(length()));
  }
  check_tokens(tokens, vocab(), where + "token ");
}

void IncrementalDecoder::check_parents(const std::vector<int32_t>& from) const {
  const std::string where = std::string(name()) + "::reorder: ";
  if (static_cast<int64_t>(from.size()) != batch_size()) {
    throw ValueError(where + std::to_string(from.size()) + " parents for a batch of " +
                     std::to_string(batch_size()));
  }
  for (int32_t f : from) {
    if (f < 0 || f >= batch_size()) {
      throw ValueError(where + "parent " + std::to_string(f) + " is outside the batch of " +
                       std::to_string(batch_size()));
    }
  }
}

std::vector<std::vector<int32_t>> IncrementalDecoder::greedy(
    Session& session, const std::vector<std::vector<int32_t>>& prompts, int64_t steps) const {
  return generate(session, prompts, steps, SamplingOptions());
}

std::vector<std::vector<int32_t>> IncrementalDecoder::generate(
    Session& session, const std::vector<std::vector<int32_t>>& prompts, int64_t steps,
    const SamplingOptions& options) const {
  const int64_t vocab_size = vocab(), batch = batch_size();
  options.validate(vocab_size);
  check_prompts(prompts, "generate");
  const int64_t n = static_cast<int64_t>(prompts[0].size());
  std::mt19937_64 rng(options.seed);
  std::vector<std::vector<int32_t>> out = prompts;
  std::vector<bool> done(batch, false);
  const int64_t total = std::min<int64_t>(n + std::max<int64_t>(steps, 0), length());
  // The prompts in one pass, then a step per new token (an ended sequence
  // is fed its stop token again, and keeps its length).
  std::vector<float> next;
  for (int64_t p = n - 1; p + 1 < total; ++p) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    if (p == n - 1) {
      next = prefill(session, prompts);
    } else {
      std::vector<int32_t> tokens;
      for (const auto& s : out) tokens.push_back(s.back());
      next = step(session, tokens, p);
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      const int32_t t = choose_next(next.data() + b * vocab_size, vocab_size, options, rng);
      out[b].push_back(t);
      done[b] = t == options.stop;
    }
  }
  return out;
}

}  // namespace mtf::models
