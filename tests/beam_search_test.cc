// Beam search over the cached decoder: one beam is greedy decoding; with as
// many beams as tokens it finds the best two-token continuation that brute
// force over full recomputation finds; a stop token ends hypotheses; a mesh
// gives one core's result; bad options are clear errors.
#include "models/beam_search.h"

#include <algorithm>
#include <cmath>

#include "expect_error.h"
#include "models/transformer_decoder.h"
#include "test_util.h"
#include "tiny_transformer.h"

namespace mtf {
namespace {

using testing::train_a_little;
using testing::window_logits;

// log_softmax(row)[v] in double.
double log_prob(const float* row, int64_t vocab, int32_t v) {
  const double top = *std::max_element(row, row + vocab);
  double z = 0;
  for (int64_t i = 0; i < vocab; ++i) z += std::exp(double(row[i]) - top);
  return double(row[v]) - top - std::log(z);
}

// The log-probability of seq's tokens after its first `n`, by recomputing
// the whole window (seq in row 0 of the batch).
double recomputed_log_prob(models::TransformerLm& lm, Session& s, const std::vector<int32_t>& seq,
                           size_t n) {
  const models::TransformerConfig& c = lm.config();
  std::vector<int32_t> windows(c.batch * c.length, 0);
  std::copy(seq.begin(), seq.end(), windows.begin());
  const std::vector<float> l = window_logits(lm, s, windows);
  double sum = 0;
  for (size_t p = n; p < seq.size(); ++p)
    sum += log_prob(l.data() + (p - 1) * c.vocab, c.vocab, seq[p]);
  return sum;
}

struct Model {
  models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm{c};
};

TEST(BeamSearchTest, OneBeamIsGreedyAndScoresItsTokens) {
  Model m;
  models::TransformerDecoder dec(m.lm, 2);
  Session s(m.lm.graph());
  train_a_little(m.lm, s);
  const std::vector<std::vector<int32_t>> prompts = {{3, 4}, {5}};
  models::BeamOptions one;
  one.beams = 1;
  one.alpha = 0;
  EXPECT_THROW(models::beam_search(dec, s, prompts, 4, one), ValueError);  // lengths differ
  const std::vector<std::vector<int32_t>> same = {{3, 4}, {5, 6}};
  const models::BeamResult r = models::beam_search(dec, s, same, 4, one);
  EXPECT_EQ(r.sequences, dec.greedy(s, same, 4));
  for (size_t i = 0; i < same.size(); ++i) {
    EXPECT_NEAR(r.log_probs[i], recomputed_log_prob(m.lm, s, r.sequences[i], 2), 1e-4);
    EXPECT_EQ(r.scores[i], r.log_probs[i]);  // alpha 0: no length penalty
  }
}

TEST(BeamSearchTest, AsManyBeamsAsTokensFindTheBestTwoTokens) {
  Model m;
  const int64_t v = m.c.vocab;
  models::TransformerDecoder dec(m.lm, 2 * v);
  Session s(m.lm.graph());
  train_a_little(m.lm, s);
  const std::vector<std::vector<int32_t>> prompts = {{3, 9, 4}, {5, 1, 6}};
  models::BeamOptions all;
  all.beams = v;
  all.alpha = 0;
  const models::BeamResult r = models::beam_search(dec, s, prompts, 2, all);
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Brute force: every first token, then its best second token.
    double best = -1e300;
    std::vector<int32_t> best_seq;
    for (int32_t t1 = 0; t1 < v; t1 += static_cast<int32_t>(m.c.batch)) {
      std::vector<int32_t> windows(m.c.batch * m.c.length, 0);
      for (int64_t b = 0; b < m.c.batch; ++b) {
        std::copy(prompts[i].begin(), prompts[i].end(), windows.begin() + b * m.c.length);
        windows[b * m.c.length + 3] = t1 + static_cast<int32_t>(b);
      }
      const std::vector<float> l = window_logits(m.lm, s, windows);
      for (int64_t b = 0; b < m.c.batch; ++b) {
        const float* at2 = l.data() + (b * m.c.length + 2) * v;
        const float* at3 = l.data() + (b * m.c.length + 3) * v;
        const int32_t first = t1 + static_cast<int32_t>(b);
        for (int32_t t2 = 0; t2 < v; ++t2) {
          const double lp = log_prob(at2, v, first) + log_prob(at3, v, t2);
          if (lp > best) {
            best = lp;
            best_seq = prompts[i];
            best_seq.insert(best_seq.end(), {first, t2});
          }
        }
      }
    }
    EXPECT_EQ(r.sequences[i], best_seq) << "prompt " << i;
    EXPECT_NEAR(r.log_probs[i], best, 1e-4) << "prompt " << i;
  }
}

TEST(BeamSearchTest, MoreBeamsScoreAtLeastGreedyAndAStopTokenEndsHypotheses) {
  Model m;
  models::TransformerDecoder dec1(m.lm, 1), dec4(m.lm, 4), dec16(m.lm, 16);
  Session s(m.lm.graph());
  train_a_little(m.lm, s);
  const std::vector<std::vector<int32_t>> prompt = {{2, 8}};
  const auto greedy = dec1.greedy(s, prompt, 6)[0];
  models::BeamOptions o;
  o.alpha = 0;
  double previous = recomputed_log_prob(m.lm, s, greedy, 2);
  for (int64_t beams : {4, 16}) {
    o.beams = beams;
    const models::BeamResult r = models::beam_search(beams == 4 ? dec4 : dec16, s, prompt, 6, o);
    SCOPED_TRACE(std::to_string(beams) + " beams");
    EXPECT_EQ(r.sequences[0].size(), greedy.size());
    EXPECT_GE(r.log_probs[0], previous - 1e-6);
    // Hypotheses change places between steps: the caches must follow them.
    EXPECT_NEAR(r.log_probs[0], recomputed_log_prob(m.lm, s, r.sequences[0], 2), 1e-4);
    previous = r.log_probs[0];
  }
  o.beams = 4;
  // The greedy first token as the stop: no longer hypothesis can beat the
  // one that stops at once (alpha 0: log-probabilities only fall).
  o.stop = greedy[2];
  const models::BeamResult stopped = models::beam_search(dec4, s, prompt, 6, o);
  EXPECT_EQ(stopped.sequences[0], std::vector<int32_t>(greedy.begin(), greedy.begin() + 3));
  // With a length penalty the scores are log-probability / ((5 + n) / 6)^alpha.
  o.stop = -1;
  o.alpha = 1.0;
  const models::BeamResult penalised = models::beam_search(dec4, s, prompt, 6, o);
  EXPECT_NEAR(penalised.scores[0], penalised.log_probs[0] / ((5.0 + 6) / 6.0), 1e-12);
}

TEST(BeamSearchTest, AMeshGivesOneCoresResult) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  auto search = [&](const MeshConfig& mesh) {
    models::TransformerLm lm(c);
    models::TransformerDecoder dec(lm, 4);
    Session s(lm.graph(), mesh);
    train_a_little(lm, s);
    models::BeamOptions o;
    o.beams = 2;
    return models::beam_search(dec, s, {{1, 2}, {3, 4}}, 5, o);
  };
  MeshConfig one;
  one.reproducible = true;
  const models::BeamResult want = search(one);
  MeshConfig mc = one;
  mc.mesh_shape = MeshShape("batch:2;model:2");
  mc.layout = LayoutRules("batch:batch;vocab:model;d_ff:model;heads:model");
  const models::BeamResult got = search(mc);
  EXPECT_EQ(got.sequences, want.sequences);
  EXPECT_EQ(got.log_probs, want.log_probs);
}

TEST(BeamSearchTest, BadOptionsAreClearErrors) {
  Model m;
  models::TransformerDecoder dec(m.lm, 4);
  Session s(m.lm.graph());
  auto expect_error = [&](const models::BeamOptions& o, const char* says) {
    testing::expect_error<ValueError>([&] { models::beam_search(dec, s, {{1}, {2}}, 2, o); }, says);
  };
  models::BeamOptions o;
  o.beams = 0;
  expect_error(o, "beams must be >= 1");
  o.beams = 2;
  o.alpha = -1;
  expect_error(o, "alpha must be >= 0");
  o.alpha = 0;
  o.stop = 64;
  expect_error(o, "stop token 64");
  o.stop = -1;
  o.beams = 3;
  expect_error(o, "cannot hold 2 prompts x 3 beams (make it with batch 6)");
}

}  // namespace
}  // namespace mtf
