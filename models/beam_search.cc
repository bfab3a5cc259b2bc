#include "models/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace mtf::models {

void BeamOptions::validate(int64_t vocab) const {
  if (beams < 1) throw ValueError("beam search: beams must be >= 1, got " + std::to_string(beams));
  if (!(alpha >= 0))
    throw ValueError("beam search: alpha must be >= 0, got " + std::to_string(alpha));
  if (stop < -1 || stop >= vocab) {
    throw ValueError("beam search: stop token " + std::to_string(stop) +
                     " is outside the vocabulary of " + std::to_string(vocab) + " (-1: none)");
  }
}

namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();

struct Hypothesis {
  std::vector<int32_t> tokens;  // prompt included
  double log_prob = 0;
  double score = kNever;
};

// log_softmax of one row of logits, in double.
std::vector<double> log_probs_of(const float* row, int64_t vocab) {
  const double top = *std::max_element(row, row + vocab);
  double z = 0;
  for (int64_t v = 0; v < vocab; ++v) z += std::exp(double(row[v]) - top);
  const double log_z = top + std::log(z);
  std::vector<double> out(vocab);
  for (int64_t v = 0; v < vocab; ++v) out[v] = double(row[v]) - log_z;
  return out;
}

struct Candidate {
  double log_prob;
  int64_t beam;
  int32_t token;
};

// The 2 x beams best one-token extensions of one prompt's live hypotheses
// (`logits`: their rows, beams x vocab) by log-probability; ties: lower
// beam, then lower token.
std::vector<Candidate> best_extensions(const std::vector<Hypothesis>& alive, const float* logits,
                                       int64_t vocab, int64_t beams) {
  std::vector<Candidate> candidates;
  for (int64_t w = 0; w < beams; ++w) {
    if (alive[w].log_prob == kNever) continue;
    const std::vector<double> lp = log_probs_of(logits + w * vocab, vocab);
    for (int64_t v = 0; v < vocab; ++v)
      candidates.push_back({alive[w].log_prob + lp[v], w, static_cast<int32_t>(v)});
  }
  const size_t keep = std::min<size_t>(candidates.size(), 2 * beams);
  std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(),
                    [](const Candidate& a, const Candidate& b) {
                      if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
                      return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
                    });
  candidates.resize(keep);
  return candidates;
}

}  // namespace

BeamResult beam_search(const IncrementalDecoder& decoder, Session& session,
                       const std::vector<std::vector<int32_t>>& prompts, int64_t steps,
                       const BeamOptions& options) {
  const int64_t vocab = decoder.vocab(), beams = options.beams;
  options.validate(vocab);
  const int64_t sequences = static_cast<int64_t>(prompts.size());
  if (sequences * beams != decoder.batch_size()) {
    throw ValueError("beam search: a decoder of batch " + std::to_string(decoder.batch_size()) +
                     " cannot hold " + std::to_string(sequences) + " prompts x " +
                     std::to_string(beams) + " beams (make it with batch " +
                     std::to_string(sequences * beams) + ")");
  }
  std::vector<std::vector<int32_t>> rows;
  for (const auto& p : prompts) rows.insert(rows.end(), beams, p);
  decoder.check_prompts(rows, "beam_search");
  const int64_t n = static_cast<int64_t>(prompts[0].size());
  const int64_t total = std::min<int64_t>(n + std::max<int64_t>(steps, 0), decoder.length());
  auto penalty = [&](int64_t new_tokens) {
    return std::pow((5.0 + static_cast<double>(new_tokens)) / 6.0, options.alpha);
  };

  // alive[s][w]: prompt s's live hypotheses; every one starts as the prompt,
  // but only beam 0 expands at first (the others would repeat it).
  std::vector<std::vector<Hypothesis>> alive(sequences), finished(sequences);
  for (int64_t s = 0; s < sequences; ++s) {
    alive[s].assign(beams, Hypothesis{prompts[s], 0.0, kNever});
    for (int64_t w = 1; w < beams; ++w) alive[s][w].log_prob = kNever;
  }
  std::vector<bool> done(sequences, false);
  auto worst_finished = [&](int64_t s) {
    return static_cast<int64_t>(finished[s].size()) < beams ? kNever : finished[s].back().score;
  };
  auto add_finished = [&](int64_t s, Hypothesis h) {
    auto& f = finished[s];
    f.insert(std::upper_bound(
                 f.begin(), f.end(), h,
                 [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; }),
             std::move(h));
    if (static_cast<int64_t>(f.size()) > beams) f.pop_back();
  };

  std::vector<float> logits;
  for (int64_t p = n - 1; p + 1 < total; ++p) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    if (p == n - 1) {
      logits = decoder.prefill(session, rows);
    } else {
      std::vector<int32_t> tokens;
      for (int64_t s = 0; s < sequences; ++s)
        for (const Hypothesis& h : alive[s]) tokens.push_back(h.tokens.back());
      logits = decoder.step(session, tokens, p);
    }
    const int64_t new_tokens = p + 2 - n;  // each hypothesis' after this step
    std::vector<int32_t> parents(decoder.batch_size());
    std::iota(parents.begin(), parents.end(), 0);
    for (int64_t s = 0; s < sequences; ++s) {
      if (done[s]) continue;
      // At most `beams` of the 2 x beams best end with the stop token, so at
      // least `beams` go on.
      const std::vector<Candidate> candidates =
          best_extensions(alive[s], logits.data() + s * beams * vocab, vocab, beams);
      std::vector<Hypothesis> next;
      for (const Candidate& c : candidates) {
        Hypothesis h{alive[s][c.beam].tokens, c.log_prob, c.log_prob / penalty(new_tokens)};
        h.tokens.push_back(c.token);
        if (c.token == options.stop) {
          if (h.score > worst_finished(s)) add_finished(s, std::move(h));
        } else if (static_cast<int64_t>(next.size()) < beams) {
          parents[s * beams + static_cast<int64_t>(next.size())] =
              static_cast<int32_t>(s * beams + c.beam);
          next.push_back(std::move(h));
        }
      }
      while (static_cast<int64_t>(next.size()) < beams) {  // fewer candidates than beams
        parents[s * beams + static_cast<int64_t>(next.size())] = static_cast<int32_t>(s * beams);
        next.push_back(Hypothesis{prompts[s], kNever, kNever});
      }
      alive[s] = std::move(next);
      // No live hypothesis can beat the finished ones: its log-probability
      // only falls, and its penalty is at most that of the longest.
      const double best_possible = alive[s][0].log_prob / penalty(total - n);
      done[s] = best_possible <= worst_finished(s);
    }
    bool moved = false;
    for (size_t r = 0; r < parents.size(); ++r) moved = moved || parents[r] != int32_t(r);
    if (moved && p + 2 < total) decoder.reorder(session, parents);
  }

  BeamResult result;
  for (int64_t s = 0; s < sequences; ++s) {
    // Live hypotheses that reached the length limit compete with the finished.
    for (Hypothesis& h : alive[s])
      if (h.log_prob != kNever && h.score > worst_finished(s)) add_finished(s, std::move(h));
    const Hypothesis& best =
        finished[s].empty() ? Hypothesis{prompts[s], 0.0, 0.0} : finished[s].front();
    result.sequences.push_back(best.tokens);
    result.log_probs.push_back(best.log_prob);
    result.scores.push_back(best.score);
  }
  return result;
}

}  // namespace mtf::models
