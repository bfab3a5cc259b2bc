// Incremental decoding with key/value caches: every step's logits, and the
// prefill's, equal the whole window's at that position (1e-5), a reorder
// hands each sequence its parent's caches, greedy decoding picks the tokens
// full recomputation picks, a mesh layout gives one core's bits in
// reproducible mode, and bad input is a clear error.
#include <algorithm>
#include <cmath>
#include <functional>

#include "models/transformer_decoder.h"
#include "test_util.h"
#include "tiny_transformer.h"

namespace mtf {
namespace {

using testing::train_a_little;
using testing::window_logits;

// `batch` windows of the tiny model's length, different for each `seed`.
std::vector<int32_t> some_windows(const models::TransformerConfig& c, int seed) {
  std::vector<int32_t> w(c.batch * c.length);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<int32_t>((i * 11 + seed * 5 + 3) % c.vocab);
  return w;
}

// Rows [b, p, :] of window logits [batch, length, vocab], one after another.
std::vector<float> rows_at(const std::vector<float>& logits, const models::TransformerConfig& c,
                           int64_t p) {
  std::vector<float> out;
  for (int64_t b = 0; b < c.batch; ++b) {
    const float* row = logits.data() + (b * c.length + p) * c.vocab;
    out.insert(out.end(), row, row + c.vocab);
  }
  return out;
}

TEST(TransformerDecodeTest, EachStepMatchesTheWholeWindow) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, c.batch);
  Session s(lm.graph());
  train_a_little(lm, s);
  // Two sets of windows: the second starts again at position 0 over the
  // first one's caches.
  for (int set = 0; set < 2; ++set) {
    const std::vector<int32_t> windows = some_windows(c, set);
    const std::vector<float> want = window_logits(lm, s, windows);
    for (int64_t p = 0; p < c.length; ++p) {
      std::vector<int32_t> tokens;
      for (int64_t b = 0; b < c.batch; ++b) tokens.push_back(windows[b * c.length + p]);
      SCOPED_TRACE("set " + std::to_string(set) + " position " + std::to_string(p));
      testing::expect_near_vectors(dec.step(s, tokens, p), rows_at(want, c, p), 1e-5f);
    }
  }
}

TEST(TransformerDecodeTest, GreedyPicksTheTokensOfFullRecomputation) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, c.batch);
  Session s(lm.graph());
  train_a_little(lm, s);
  for (size_t prompt_length : {1, 3}) {
    std::vector<std::vector<int32_t>> prompts(c.batch);
    for (int64_t b = 0; b < c.batch; ++b)
      for (size_t i = 0; i < prompt_length; ++i)
        prompts[b].push_back(static_cast<int32_t>((b * 13 + i * 5 + 1) % c.vocab));
    const auto got = dec.greedy(s, prompts, 100);  // stops at the length
    // Recompute: the window so far (padded), the argmax at its last position.
    std::vector<std::vector<int32_t>> want = prompts;
    while (static_cast<int64_t>(want[0].size()) < c.length) {
      std::vector<int32_t> windows(c.batch * c.length, 0);
      for (int64_t b = 0; b < c.batch; ++b)
        std::copy(want[b].begin(), want[b].end(), windows.begin() + b * c.length);
      const std::vector<float> l = window_logits(lm, s, windows);
      const int64_t p = static_cast<int64_t>(want[0].size()) - 1;
      for (int64_t b = 0; b < c.batch; ++b) {
        const float* row = l.data() + (b * c.length + p) * c.vocab;
        want[b].push_back(static_cast<int32_t>(std::max_element(row, row + c.vocab) - row));
      }
    }
    EXPECT_EQ(got, want) << "prompt length " << prompt_length;
  }
}

TEST(TransformerDecodeTest, PrefillMatchesTheWholeWindowAndStepsGoOnFromIt) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, c.batch);
  Session s(lm.graph());
  train_a_little(lm, s);
  int seed = 0;
  for (int64_t n : {int64_t{1}, int64_t{3}, c.length}) {
    // The caches hold another set of sequences first: rows past the prompt
    // are stale and must not matter.
    dec.greedy(s, std::vector<std::vector<int32_t>>(c.batch, std::vector<int32_t>{7}), c.length);
    const std::vector<int32_t> windows = some_windows(c, ++seed);
    const std::vector<float> want = window_logits(lm, s, windows);
    std::vector<std::vector<int32_t>> prompts(c.batch);
    for (int64_t b = 0; b < c.batch; ++b)
      prompts[b].assign(windows.begin() + b * c.length, windows.begin() + b * c.length + n);
    SCOPED_TRACE("prompt length " + std::to_string(n));
    testing::expect_near_vectors(dec.prefill(s, prompts), rows_at(want, c, n - 1), 1e-5f);
    for (int64_t p = n; p < c.length; ++p) {
      std::vector<int32_t> tokens;
      for (int64_t b = 0; b < c.batch; ++b) tokens.push_back(windows[b * c.length + p]);
      SCOPED_TRACE("position " + std::to_string(p));
      testing::expect_near_vectors(dec.step(s, tokens, p), rows_at(want, c, p), 1e-5f);
    }
  }
}

TEST(TransformerDecodeTest, ReorderHandsEachSequenceItsParentsCaches) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, c.batch);
  Session s(lm.graph());
  train_a_little(lm, s);
  const std::vector<int32_t> windows = some_windows(c, 4);
  std::vector<std::vector<int32_t>> prompts(c.batch);
  for (int64_t b = 0; b < c.batch; ++b)
    prompts[b].assign(windows.begin() + b * c.length, windows.begin() + b * c.length + 3);
  dec.prefill(s, prompts);
  const std::vector<int32_t> parents = {2, 0, 0, 3};
  dec.reorder(s, parents);
  // Now sequence b is parents[b]'s window: the next step follows it.
  std::vector<int32_t> moved, tokens;
  for (int32_t from : parents) {
    moved.insert(moved.end(), windows.begin() + from * c.length,
                 windows.begin() + (from + 1) * c.length);
    tokens.push_back(windows[from * c.length + 3]);
  }
  testing::expect_near_vectors(dec.step(s, tokens, 3), rows_at(window_logits(lm, s, moved), c, 3),
                               1e-5f);
  EXPECT_THROW(dec.reorder(s, {0, 1, 2}), ValueError);
  EXPECT_THROW(dec.reorder(s, {0, 1, 2, 4}), ValueError);
}

TEST(TransformerDecodeTest, AMeshGivesOneCoresBits) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  auto decode = [&](const MeshConfig& mesh) {
    models::TransformerLm lm(c);
    models::TransformerDecoder dec(lm, 2);
    Session s(lm.graph(), mesh);
    train_a_little(lm, s);
    std::vector<float> all;
    for (int64_t p = 0; p < c.length; ++p) {
      const std::vector<float> l =
          dec.step(s, {static_cast<int32_t>(p * 3 % 64), static_cast<int32_t>(p * 7 % 64)}, p);
      all.insert(all.end(), l.begin(), l.end());
    }
    // The prefill, a reorder and a step after them.
    std::vector<float> l = dec.prefill(s, {{1, 2, 3}, {4, 5, 6}});
    all.insert(all.end(), l.begin(), l.end());
    dec.reorder(s, {1, 1});
    l = dec.step(s, {9, 10}, 3);
    all.insert(all.end(), l.begin(), l.end());
    return all;
  };
  MeshConfig one;
  one.reproducible = true;
  const std::vector<float> want = decode(one);
  for (const auto& [m, l] : std::vector<std::pair<const char*, const char*>>{
           {"batch:2;model:2", "batch:batch;vocab:model;d_ff:model;heads:model"},
           {"model:4", "heads:model;d_ff:model"}}) {
    SCOPED_TRACE(std::string(m) + " " + l);
    MeshConfig mc = one;
    mc.mesh_shape = MeshShape(m);
    mc.layout = LayoutRules(l);
    EXPECT_EQ(decode(mc), want);
  }
}

TEST(SamplingTest, DrawsFromTheTemperedRestrictedSoftmax) {
  const float row[] = {2.f, 1.f, 0.f, -1.f, 3.f, 3.f};
  std::mt19937_64 rng(5);
  models::SamplingOptions greedy;
  EXPECT_EQ(models::choose_next(row, 6, greedy, rng), 4);  // the lowest of the tied ids
  auto frequencies = [&](const models::SamplingOptions& o) {
    std::vector<double> f(6, 0);
    for (int i = 0; i < 20000; ++i) f[models::choose_next(row, 6, o, rng)] += 1.0 / 20000;
    return f;
  };
  models::SamplingOptions o;
  o.temperature = 2.0;
  std::vector<double> want(6);
  double z = 0;
  for (int v = 0; v < 6; ++v) z += want[v] = std::exp(row[v] / 2.0);
  const std::vector<double> got = frequencies(o);
  for (int v = 0; v < 6; ++v) EXPECT_NEAR(got[v], want[v] / z, 0.015) << "id " << v;
  o.top_k = 3;  // ids 4, 5 and 0
  const std::vector<double> k3 = frequencies(o);
  EXPECT_EQ(k3[1] + k3[2] + k3[3], 0.0);
  EXPECT_GT(k3[0], 0.0);
  o.top_k = 0;
  o.temperature = 1.0;
  o.top_p = 0.5;  // ids 4 and 5 hold 0.68 of the mass, id 4 alone 0.34
  const std::vector<double> nucleus = frequencies(o);
  EXPECT_NEAR(nucleus[4] + nucleus[5], 1.0, 1e-12);
  EXPECT_NEAR(nucleus[4], 0.5, 0.02);
}

TEST(TransformerDecodeTest, GenerateSamplesStopsAndRepeatsItsDraws) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, 2);
  Session s(lm.graph());
  train_a_little(lm, s);
  const std::vector<std::vector<int32_t>> prompts = {{3, 4}, {5, 6}};
  const auto greedy = dec.greedy(s, prompts, 4);
  EXPECT_EQ(dec.generate(s, prompts, 4, models::SamplingOptions()), greedy);
  models::SamplingOptions hot;
  hot.temperature = 1.5;
  hot.seed = 9;
  const auto a = dec.generate(s, prompts, 5, hot), b = dec.generate(s, prompts, 5, hot);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0].size(), 7u);
  // A stop token ends the sequence that emits it; the other goes on.
  models::SamplingOptions stop;
  stop.stop = greedy[0][2];
  const auto stopped = dec.generate(s, prompts, 4, stop);
  EXPECT_EQ(stopped[0], std::vector<int32_t>(greedy[0].begin(), greedy[0].begin() + 3));
  if (std::find(greedy[1].begin() + 2, greedy[1].end(), stop.stop) == greedy[1].end()) {
    EXPECT_EQ(stopped[1], greedy[1]);
  }
}

TEST(TransformerDecodeTest, BadInputIsAClearError) {
  const models::TransformerConfig c = testing::tiny_transformer_config();
  models::TransformerLm lm(c);
  models::TransformerDecoder dec(lm, 2);
  Session s(lm.graph());
  EXPECT_THROW(dec.step(s, {1, 2}, c.length), ValueError);
  EXPECT_THROW(dec.step(s, {1, 2}, -1), ValueError);
  EXPECT_THROW(dec.step(s, {1, int32_t(c.vocab)}, 0), ValueError);
  EXPECT_THROW(dec.step(s, {1}, 0), ValueError);
  EXPECT_THROW(
      dec.greedy(s, {std::vector<int32_t>(c.length + 1, 1), std::vector<int32_t>(c.length + 1, 1)},
                 1),
      ValueError);
  EXPECT_THROW(dec.greedy(s, {{1}, {1, 2}}, 1), ValueError);
  EXPECT_THROW(dec.greedy(s, {{1}}, 1), ValueError);
  EXPECT_THROW(dec.prefill(s, {{1}, {int32_t(c.vocab)}}), ValueError);
  EXPECT_THROW(dec.prefill(s, {{}, {}}), ValueError);
  for (const auto& set : std::vector<std::function<void(models::SamplingOptions&)>>{
           [](models::SamplingOptions& o) { o.temperature = -1; },
           [](models::SamplingOptions& o) { o.top_k = -1; },
           [](models::SamplingOptions& o) { o.top_p = 0; },
           [](models::SamplingOptions& o) { o.top_p = 1.5; },
           [&](models::SamplingOptions& o) { o.stop = static_cast<int32_t>(c.vocab); }}) {
    models::SamplingOptions o;
    set(o);
    EXPECT_THROW(dec.generate(s, {{1}, {2}}, 1, o), ValueError);
  }
  models::TransformerConfig moe = c;
  moe.moe_experts = 2;
  models::TransformerLm moe_lm(moe);
  EXPECT_THROW(models::TransformerDecoder(moe_lm, 1), ValueError);
}

}  // namespace
}  // namespace mtf
