// Cached decoding of the sequence-to-sequence Transformer
// (models/encdec_decoder.h): each step's logits equal the whole sequence's
// at that position (every variant, bfloat16 too); cached greedy decoding
// translates as recomputation does; beam search finds brute force's best
// translation on a tiny vocabulary; a 2x2 mesh gives one core's
// translations; a decoder made for beams encodes each sentence once with
// the bits of encoding it once per beam; misuse is a clear error.
#include "models/encdec_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "encdec_test_util.h"

namespace mtf::models {
namespace {

EncDecConfig tiny() { return tiny_encdec(2, 7, 5); }

// Random values for the relative position tables (zeros at first, which
// would test nothing).
void randomize_relative_bias(Session& s) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::string& name : s.variable_names()) {
    if (name.find("relative_attention_bias") == std::string::npos) continue;
    HostTensor t = s.variable_value(name);
    std::vector<float> v(t.num_elements());
    for (float& x : v) x = normal(rng);
    s.set_variable_value(name, HostTensor::from_floats(t.shape(), v));
  }
}

// Sources of different lengths (some padded), ending with 1.
std::vector<std::vector<int32_t>> some_sources(int64_t n, int64_t max_length, int64_t vocab) {
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> s;
    const int64_t len = 1 + static_cast<int64_t>(rng() % (max_length - 1));
    for (int64_t j = 0; j < len; ++j) s.push_back(2 + static_cast<int32_t>(rng() % (vocab - 2)));
    s.push_back(1);
    out.push_back(s);
  }
  return out;
}

HostTensor padded(const Shape& shape, const std::vector<std::vector<int32_t>>& rows) {
  const int64_t length = shape[1].size;
  std::vector<int32_t> v(shape.num_elements(), 0);
  for (size_t b = 0; b < rows.size(); ++b)
    for (size_t i = 0; i < rows[b].size() && static_cast<int64_t>(i) < length; ++i)
      v[b * length + i] = rows[b][i];
  return HostTensor::from_ints(shape, v);
}

TEST(EncDecDecoder, StepsGiveTheWholeSequencesLogits) {
  for (int variant = 0; variant < 4; ++variant) {
    EncDecConfig c = tiny();
    c.norm = variant % 2 ? "layer" : "rms";
    c.ffn = variant >= 2 ? "gated_gelu" : "relu";
    c.position = variant == 1 ? "absolute" : "relative";
    const bool bf16 = variant == 3;
    if (bf16) c.variable_dtype = VariableDType::of(bfloat16);
    TransformerEncDec m(c);
    EncDecDecoder d(m, c.batch);
    Session s(m.graph());
    randomize_relative_bias(s);
    const auto sources = some_sources(c.batch, c.input_length, c.vocab);
    const auto targets = some_sources(c.batch, c.target_length, c.vocab);
    const std::vector<float> whole =
        s.run(m.eval_logits,
              m.feeds(padded(m.inputs.shape(), sources), padded(m.targets.shape(), targets)))
            .to_floats();
    d.encode(s, sources);
    const int64_t T = c.target_length, V = c.vocab;
    double worst = 0;
    for (int64_t p = 0; p < T; ++p) {
      std::vector<int32_t> tokens;  // the targets shifted right
      for (const auto& t : targets)
        tokens.push_back(p == 0 ? 0 : (p - 1 < int64_t(t.size()) ? t[p - 1] : 0));
      const std::vector<float> step = d.step(s, tokens, p);
      for (int64_t b = 0; b < c.batch; ++b) {
        EXPECT_TRUE(std::isinf(step[b * V]) && step[b * V] < 0) << "padding is never chosen";
        for (int64_t v = 1; v < V; ++v)
          worst = std::max(worst, double(std::fabs(step[b * V + v] - whole[(b * T + p) * V + v])));
      }
    }
    EXPECT_LT(worst, bf16 ? 0.1 : 1e-4) << "variant " << variant;
  }
}

TEST(EncDecDecoder, CachedGreedyTranslatesAsRecomputationDoes) {
  EncDecConfig c = tiny();
  TransformerEncDec m(c);
  EncDecDecoder d(m, 2);
  Session s(m.graph());
  randomize_relative_bias(s);
  const auto sources = some_sources(c.batch, c.input_length, c.vocab);
  const auto recomputed = translate_greedy(m, s, sources);
  BeamOptions one;
  one.beams = 1;
  EXPECT_EQ(translate(d, s, sources, one), recomputed);  // two batches of two
  // Three sentences: the last batch is filled and the filler dropped.
  const std::vector<std::vector<int32_t>> three(sources.begin(), sources.begin() + 3);
  EXPECT_EQ(translate(d, s, three, one),
            std::vector<std::vector<int32_t>>(recomputed.begin(), recomputed.begin() + 3));
}

// log P(ids + end, or ids cut by the length) of one source by full
// recomputation, padding excluded from each softmax as the decoder excludes
// it; `finished` when the sequence emitted the end.
double recomputed_log_prob(TransformerEncDec& m, Session& s, const std::vector<int32_t>& source,
                           const std::vector<int32_t>& ids) {
  const int64_t T = m.targets_length.size, V = m.vocab.size, B = m.batch.size;
  const std::vector<std::vector<int32_t>> sources(B, source), targets(B, ids);
  const std::vector<float> logits =
      s.run(m.eval_logits,
            m.feeds(padded(m.inputs.shape(), sources), padded(m.targets.shape(), targets)))
          .to_floats();
  double total = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* row = logits.data() + static_cast<int64_t>(p) * V;
    double z = 0;
    for (int64_t v = 1; v < V; ++v) z += std::exp(double(row[v]));
    total += double(row[ids[p]]) - std::log(z);
  }
  (void)T;
  return total;
}

TEST(EncDecDecoder, BeamSearchFindsBruteForcesBestTranslation) {
  EncDecConfig c = tiny();
  c.vocab = 5;  // padding, end, and three words
  c.target_length = 3;
  c.batch = 1;
  TransformerEncDec m(c);
  const int64_t beams = 9;  // every live hypothesis of three words
  EncDecDecoder d(m, 2 * beams);
  Session s(m.graph());
  randomize_relative_bias(s);
  const std::vector<std::vector<int32_t>> sources = {{2, 3, 4, 1}, {4, 4, 1}};
  BeamOptions o;
  o.beams = beams;
  o.alpha = 0.6;
  const auto found = translate(d, s, sources, o);
  for (size_t i = 0; i < sources.size(); ++i) {
    // Every translation: up to three words, ended by 1 unless at the limit.
    double best = -1e300;
    std::vector<int32_t> best_ids;
    std::function<void(std::vector<int32_t>)> visit = [&](std::vector<int32_t> ids) {
      const bool ended = !ids.empty() && ids.back() == 1;
      if (ended || static_cast<int64_t>(ids.size()) == c.target_length) {
        const double words = static_cast<double>(ids.size());
        const double score =
            recomputed_log_prob(m, s, sources[i], ids) / std::pow((5.0 + words) / 6.0, o.alpha);
        if (score > best) {
          best = score;
          best_ids = ids;
          if (ended) best_ids.pop_back();
        }
        return;
      }
      for (int32_t v = 1; v < c.vocab; ++v) {
        ids.push_back(v);
        visit(ids);
        ids.pop_back();
      }
    };
    visit({});
    EXPECT_EQ(found[i], best_ids) << "source " << i;
  }
}

TEST(EncDecDecoder, AMeshGivesOneCoresTranslations) {
  EncDecConfig c = tiny();
  std::vector<std::vector<std::vector<int32_t>>> results;
  for (const auto& [mesh, layout] : std::vector<std::pair<const char*, const char*>>{
           {"all:1", ""}, {"rows:2;cols:2", "batch:rows;heads:cols;d_ff:cols;vocab:cols"}}) {
    TransformerEncDec m(c);
    EncDecDecoder d(m, 4);
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh);
    mc.layout = LayoutRules(layout);
    mc.reproducible = true;
    Session s(m.graph(), mc);
    randomize_relative_bias(s);
    BeamOptions o;
    o.beams = 2;
    results.push_back(translate(d, s, some_sources(5, c.input_length, c.vocab), o));
  }
  EXPECT_EQ(results[1], results[0]);
}

// A decoder made for 3 beams encodes 2 sentences (its encoder over 2 rows,
// not 6) and fills each sentence's 3 rows with the caches that encoding the
// sentence 3 times fills, bit for bit in reproducible mode, on one core and
// on a 2x2 mesh; its beam search then finds what the row-by-row one finds.
TEST(EncDecDecoder, EncodesEachSentenceOnceForItsBeams) {
  EncDecConfig c = tiny();
  for (const auto& [mesh, layout] : std::vector<std::pair<const char*, const char*>>{
           {"all:1", ""}, {"rows:2;cols:2", "batch:rows;heads:cols;d_ff:cols;vocab:cols"}}) {
    SCOPED_TRACE(mesh);
    TransformerEncDec m(c);
    EncDecDecoder shared(m, 6, "batch", 3), per_row(m, 6);
    EXPECT_EQ(shared.sentence_source.shape()[0].size, 2);
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh);
    mc.layout = LayoutRules(layout);
    mc.reproducible = true;
    Session s(m.graph(), mc);
    randomize_relative_bias(s);
    const auto sources = some_sources(2, c.input_length, c.vocab);
    shared.encode(s, sources);
    per_row.encode(s, {sources[0], sources[0], sources[0], sources[1], sources[1], sources[1]});
    ASSERT_EQ(shared.caches().size(), per_row.caches().size());
    int compared = 0;
    for (size_t i = 0; i < shared.caches().size(); ++i) {
      const std::string a = shared.caches()[i].op().name(), b = per_row.caches()[i].op().name();
      if (a.find("self_") != std::string::npos) continue;  // filled by the steps
      const HostTensor x = s.variable_value(a), y = s.variable_value(b);
      EXPECT_EQ(x.to_floats(), y.to_floats()) << a;
      ++compared;
    }
    EXPECT_EQ(compared, 1 + 2 * c.decoder_layers);  // the mask, k and v per layer
    BeamOptions o;
    o.beams = 3;
    const auto more = some_sources(5, c.input_length, c.vocab);
    EXPECT_EQ(translate(shared, s, more, o), translate(per_row, s, more, o));
  }
}

TEST(EncDecDecoder, MisuseIsAClearError) {
  EncDecConfig c = tiny();
  TransformerEncDec m(c);
  EncDecDecoder d(m, 2);
  Session s(m.graph());
  EXPECT_THROW(d.step(s, {0, 0}, 0), ValueError);   // nothing encoded
  EXPECT_THROW(d.encode(s, {{2, 1}}), ValueError);  // one source for two
  EXPECT_THROW(d.encode(s, {{2, 1}, {2, 99}}), ValueError);
  d.encode(s, {{2, 1}, {3, 1}});
  EXPECT_THROW(d.step(s, {0, 0}, c.target_length), ValueError);
  EXPECT_THROW(d.step(s, {0}, 0), ValueError);
  EXPECT_THROW(d.reorder(s, {0, 0}), ValueError);  // the other source's caches
  EXPECT_NO_THROW(d.reorder(s, {0, 1}));
  BeamOptions three;
  three.beams = 3;
  EXPECT_THROW(translate(d, s, {{2, 1}}, three), ValueError);
  EXPECT_THROW(EncDecDecoder(m, 0), ValueError);
  EXPECT_THROW(EncDecDecoder(m, 4, "batch", 3), ValueError);  // 3 beams do not divide 4
  EXPECT_THROW(EncDecDecoder(m, 4, "batch", 0), ValueError);
  EncDecDecoder beams2(m, 4, "beams2", 2);
  Session s2(m.graph());
  EXPECT_NO_THROW(beams2.encode(s2, {{2, 1}, {3, 1}}));                  // a source per sentence
  EXPECT_NO_THROW(beams2.encode(s2, {{2, 1}, {3, 1}, {2, 1}, {3, 1}}));  // per sequence
  try {
    beams2.encode(s2, {{2, 1}, {3, 1}, {4, 1}});
    ADD_FAILURE() << "three sources for two sentences of two beams";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("one per sentence of 2 beams: 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(beams2.reorder(s2, {1, 0, 3, 2}), ValueError);  // beams of another sentence
}

}  // namespace
}  // namespace mtf::models
