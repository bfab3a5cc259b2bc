// The sequence-to-sequence Transformer (models/transformer_encdec.h): a
// packed row gives each pair the loss it gets alone, layouts and mesh
// implementations give the one-processor bits in reproducible mode, every
// variant trains, it learns a copy task and translates it greedily, and bad
// configurations are clear errors.
#include "models/transformer_encdec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "encdec_test_util.h"
#include "models/translation_data.h"

namespace mtf::models {
namespace {

EncDecConfig tiny() { return tiny_encdec(1, 6, 6); }

HostTensor ints(const Shape& shape, const std::vector<int32_t>& v) {
  return HostTensor::from_ints(shape, v);
}

TEST(TransformerEncDec, PackedRowGivesEachPairTheLossItGetsAlone) {
  EncDecConfig packed_config = tiny();
  packed_config.packed = true;
  packed_config.batch = 1;
  packed_config.input_length = packed_config.target_length = 10;
  EncDecConfig alone_config = tiny();
  alone_config.batch = 2;
  alone_config.input_length = alone_config.target_length = 5;
  TransformerEncDec packed(packed_config), alone(alone_config);
  Session ps(packed.graph()), as(alone.graph());
  for (const std::string& name : ps.variable_names())
    as.set_variable_value(name, ps.variable_value(name));  // the same weights

  const Shape row10({packed.batch, packed.inputs_length}),
      trow10({packed.batch, packed.targets_length});
  const Feeds packed_feeds = {
      {packed.inputs, ints(row10, {5, 6, 7, 1, 4, 3, 1, 0, 0, 0})},
      {packed.inputs_segmentation, ints(row10, {1, 1, 1, 1, 2, 2, 2, 0, 0, 0})},
      {packed.inputs_position, ints(row10, {0, 1, 2, 3, 0, 1, 2, 0, 0, 0})},
      {packed.targets, ints(trow10, {8, 9, 1, 7, 7, 6, 1, 0, 0, 0})},
      {packed.targets_segmentation, ints(trow10, {1, 1, 1, 2, 2, 2, 2, 0, 0, 0})},
      {packed.targets_position, ints(trow10, {0, 1, 2, 0, 1, 2, 3, 0, 0, 0})}};
  const Feeds alone_feeds = {
      {alone.inputs, ints(alone.inputs.shape(), {5, 6, 7, 1, 0, /**/ 4, 3, 1, 0, 0})},
      {alone.targets, ints(alone.targets.shape(), {8, 9, 1, 0, 0, /**/ 7, 7, 6, 1, 0})}};
  const auto p =
      ps.run({packed.eval_loss_sum, packed.eval_tokens, packed.eval_logits}, packed_feeds);
  const auto a = as.run({alone.eval_loss_sum, alone.eval_tokens, alone.eval_logits}, alone_feeds);
  EXPECT_EQ(p[1].to_floats()[0], 7.f);
  EXPECT_EQ(a[1].to_floats()[0], 7.f);
  EXPECT_NEAR(p[0].to_floats()[0], a[0].to_floats()[0], 1e-4 * std::fabs(a[0].to_floats()[0]));
  // Logit for logit: packed position -> (row, position) alone.
  const std::vector<std::pair<int, int>> where = {{0, 0}, {0, 1}, {0, 2}, {1, 0},
                                                  {1, 1}, {1, 2}, {1, 3}};
  const auto pl = p[2].to_floats(), al = a[2].to_floats();
  for (size_t t = 0; t < where.size(); ++t)
    for (int v = 0; v < 12; ++v)
      EXPECT_NEAR(pl[t * 12 + v], al[(where[t].first * 5 + where[t].second) * 12 + v], 2e-4)
          << "packed position " << t << " id " << v;
}

TEST(TransformerEncDec, PackedBatchesHoldSegmentsAndPositionsOfTheirOwn) {
  EncDecConfig c = tiny();
  c.packed = true;
  c.batch = 2;
  c.input_length = c.target_length = 8;
  TransformerEncDec m(c);
  // Three pairs of 3+2, 4+3 and 2+2 ids (with their endings).
  std::vector<EncodedPair> pairs = {
      {{5, 6, 1}, {7, 1}, 0}, {{3, 4, 5, 1}, {8, 9, 1}, 1}, {{9, 1}, {4, 1}, 2}};
  TranslationBatcher batcher(pairs, c, 1);
  const Feeds feeds = batcher.next(m);
  ASSERT_EQ(feeds.size(), 6u);
  const auto ints_of = [&](const Tensor& t) {
    for (const auto& [tensor, value] : feeds)
      if (tensor.id() == t.id())
        return std::vector<int32_t>(value.data<int32_t>(),
                                    value.data<int32_t>() + value.num_elements());
    return std::vector<int32_t>();
  };
  const std::vector<int32_t> seg = ints_of(m.inputs_segmentation), pos = ints_of(m.inputs_position);
  const std::vector<int32_t> ids = ints_of(m.inputs);
  const std::vector<int32_t> tseg = ints_of(m.targets_segmentation);
  int64_t pairs_in_rows = 0;
  for (int row = 0; row < 2; ++row) {
    int32_t segments = 0;
    for (int k = 0; k < 8; ++k) {
      const int i = row * 8 + k;
      segments = std::max(segments, seg[i]);
      if (ids[i] == 0) {
        EXPECT_EQ(seg[i], 0) << i;  // padding
        continue;
      }
      // Segments count up from 1; positions restart in each.
      EXPECT_TRUE(seg[i] == (k ? seg[i - 1] : 1) || seg[i] == seg[i - 1] + 1) << i;
      EXPECT_EQ(pos[i], k == 0 || seg[i] != seg[i - 1] ? 0 : pos[i - 1] + 1) << i;
    }
    EXPECT_GE(segments, 2) << "row " << row << " holds one pair where two fit";
    EXPECT_EQ(*std::max_element(tseg.begin() + row * 8, tseg.begin() + row * 8 + 8), segments);
    pairs_in_rows += segments;
  }
  EXPECT_EQ(batcher.last_pairs(), pairs_in_rows);
  EXPECT_NE(seg, pos);  // their own buffers
  // A packed model evaluates rows of one pair (segment 1, positions from 0)
  // as the unpacked model does, with the same weights.
  EncDecConfig u = c;
  u.packed = false;
  TransformerEncDec plain(u);
  Session ps(m.graph()), us(plain.graph());
  for (const std::string& name : ps.variable_names())
    us.set_variable_value(name, ps.variable_value(name));
  const HostTensor in = ints(m.inputs.shape(), {5, 6, 1, 0, 0, 0, 0, 0, 3, 4, 5, 1, 0, 0, 0, 0});
  const HostTensor tg = ints(m.targets.shape(), {7, 1, 0, 0, 0, 0, 0, 0, 8, 9, 1, 0, 0, 0, 0, 0});
  const auto a = ps.run({m.eval_loss_sum}, m.feeds(in, tg))[0].to_floats();
  const auto b = us.run({plain.eval_loss_sum}, plain.feeds(in, tg))[0].to_floats();
  EXPECT_NEAR(a[0], b[0], 1e-4 * std::fabs(b[0]));
}

// Random copy-task batches: targets are the inputs (ids 3..vocab-1, then 1).
void copy_batch(TransformerEncDec& m, std::mt19937& rng, HostTensor& in, HostTensor& tg) {
  const int64_t B = m.batch.size, L = m.inputs_length.size, V = m.vocab.size;
  in = HostTensor::zeros(m.inputs.shape(), int32);
  tg = HostTensor::zeros(m.targets.shape(), int32);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = 2 + static_cast<int64_t>(rng() % (L - 2));
    for (int64_t i = 0; i < n; ++i) {
      const int32_t id = 3 + static_cast<int32_t>(rng() % (V - 3));
      in.data<int32_t>()[b * L + i] = tg.data<int32_t>()[b * L + i] = id;
    }
    in.data<int32_t>()[b * L + n] = tg.data<int32_t>()[b * L + n] = 1;
  }
}

// Packing is first fit over the batch's rows: a batch ends at the first
// pair that fits no row, and that pair starts the next batch.
TEST(TransformerEncDec, PackingFillsEveryRowFirstFit) {
  EncDecConfig c = tiny();
  c.packed = true;
  c.batch = 3;
  c.input_length = c.target_length = 16;
  TransformerEncDec m(c);
  std::mt19937 rng(9);
  std::vector<EncodedPair> pairs;
  for (size_t i = 0; i < 40; ++i) {
    EncodedPair p;
    p.source.assign(1 + rng() % 8, 4);
    p.target.assign(1 + rng() % 8, 5);
    p.source.push_back(1);
    p.target.push_back(1);
    p.index = i;
    pairs.push_back(p);
  }
  TranslationBatcher batcher(pairs, c, 1);
  // Per row: used source and target positions; and the first pair's sizes.
  struct Rows {
    std::vector<int64_t> in, tg;
    int64_t first_in = 0, first_tg = 0;
  };
  auto rows_of = [&](const Feeds& feeds) {
    Rows r{std::vector<int64_t>(3, 0), std::vector<int64_t>(3, 0)};
    for (const auto& [tensor, value] : feeds) {
      const bool in = tensor.id() == m.inputs_segmentation.id();
      if (!in && tensor.id() != m.targets_segmentation.id()) continue;
      for (int64_t i = 0; i < value.num_elements(); ++i) {
        const int32_t seg = value.data<int32_t>()[i];
        if (seg == 0) continue;
        (in ? r.in : r.tg)[i / 16] += 1;
        if (i / 16 == 0 && seg == 1) (in ? r.first_in : r.first_tg) += 1;
      }
    }
    return r;
  };
  Rows before = rows_of(batcher.next(m));
  int64_t filled = 0;
  for (int batch = 0; batch < 10; ++batch) {
    const Rows after = rows_of(batcher.next(m));
    for (int row = 0; row < 3; ++row) {
      EXPECT_TRUE(before.in[row] + after.first_in > 16 || before.tg[row] + after.first_tg > 16)
          << "batch " << batch << ": the next batch's first pair fits row " << row;
      filled += before.in[row];
    }
    before = after;
  }
  EXPECT_GT(filled, 480 * 3 / 4) << "source positions used, of 480";
}

TEST(TransformerEncDec, LayoutsAndMeshImplementationsGiveTheOneProcessorBits) {
  EncDecConfig c = tiny();
  std::vector<std::vector<float>> losses;
  std::vector<HostTensor> weights;
  const std::vector<std::pair<const char*, const char*>> layouts = {
      {"all:1", ""},
      {"rows:2;cols:2", "batch:rows;heads:cols;d_ff:cols;vocab:cols"},
      {"cols:2", "d_model:cols"}};
  for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    for (const auto& [mesh, layout] : layouts) {
      TransformerEncDec m(c);
      MeshConfig mc;
      mc.mesh_shape = MeshShape(mesh);
      mc.layout = LayoutRules(layout);
      mc.reproducible = true;
      mc.impl = impl;
      Session s(m.graph(), mc);
      std::mt19937 rng(3);
      std::vector<float> l;
      for (int step = 0; step < 3; ++step) {
        HostTensor in, tg;
        copy_batch(m, rng, in, tg);
        l.push_back(
            s.run({m.loss}, {{m.inputs, in}, {m.targets, tg}}, m.train_ops)[0].to_floats()[0]);
      }
      losses.push_back(l);
      weights.push_back(s.variable_value("decoder/layer_0/encdec_attention/q"));
    }
  }
  for (size_t i = 1; i < losses.size(); ++i) {
    EXPECT_EQ(losses[i], losses[0]) << "configuration " << i;
    EXPECT_EQ(std::memcmp(weights[i].raw_data(), weights[0].raw_data(), weights[0].num_bytes()), 0)
        << "configuration " << i;
  }
}

TEST(TransformerEncDec, EveryVariantTrains) {
  for (int variant = 0; variant < 4; ++variant) {
    EncDecConfig c = tiny();
    c.norm = variant % 2 ? "layer" : "rms";
    c.ffn = variant >= 2 ? "gated_gelu" : "relu";
    c.position = variant == 1 || variant == 3 ? "absolute" : "relative";
    c.dropout = 0.1f;
    c.label_smoothing = 0.1f;
    if (variant == 3) c.variable_dtype = VariableDType::of(bfloat16);
    TransformerEncDec m(c);
    Session s(m.graph());
    std::mt19937 rng(5);
    HostTensor in, tg;
    copy_batch(m, rng, in, tg);
    float first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      last = s.run({m.loss}, {{m.inputs, in}, {m.targets, tg}}, m.train_ops)[0].to_floats()[0];
      if (step == 0) first = last;
    }
    EXPECT_TRUE(std::isfinite(last)) << "variant " << variant;
    EXPECT_LT(last, first * 0.8f) << "variant " << variant << ": " << c.norm << " " << c.ffn << " "
                                  << c.position;
  }
}

TEST(TransformerEncDec, LearnsToCopyAndTranslatesGreedily) {
  EncDecConfig c = tiny();
  c.d_model = 32;
  c.d_ff = 64;
  c.batch = 32;
  c.learning_rate = 0.03f;
  TransformerEncDec m(c);
  Session s(m.graph());
  std::mt19937 rng(7);
  for (int step = 0; step < 1500; ++step) {
    HostTensor in, tg;
    copy_batch(m, rng, in, tg);
    s.run({m.loss}, {{m.inputs, in}, {m.targets, tg}}, m.train_ops);
  }
  HostTensor in, tg;
  copy_batch(m, rng, in, tg);
  const auto ev = s.run({m.eval_loss_sum, m.eval_tokens}, {{m.inputs, in}, {m.targets, tg}});
  EXPECT_LT(ev[0].to_floats()[0] / ev[1].to_floats()[0], 0.3f);  // nats a token (log 9 at first)
  std::vector<std::vector<int32_t>> sources;
  for (int64_t b = 0; b < c.batch; ++b) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < c.input_length; ++i) {
      const int32_t id = in.data<int32_t>()[b * c.input_length + i];
      if (id == 0) break;
      ids.push_back(id);
    }
    sources.push_back(ids);
  }
  const auto out = translate_greedy(m, s, sources);
  int exact = 0;
  for (size_t b = 0; b < sources.size(); ++b) {
    std::vector<int32_t> want(sources[b].begin(), sources[b].end() - 1);  // without the ending
    exact += out[b] == want;
  }
  EXPECT_GE(exact, 24) << "of 32 copied exactly";
  EXPECT_THROW(translate_greedy(m, s, std::vector<std::vector<int32_t>>(33, {3, 1})), ValueError);
  EXPECT_THROW(translate_greedy(m, s, {{3, 99, 1}}), ValueError);
}

// stack_dropout drops at the stacks' edges only, at its own rate (-1:
// dropout's): the training loss of one batch moves exactly when some
// dropout acts.
TEST(TransformerEncDec, StackDropoutActsAtTheStacksEdgesOnly) {
  auto training_loss = [](float dropout, float stack_dropout) {
    EncDecConfig c = tiny();
    c.dropout = dropout;
    c.stack_dropout = stack_dropout;
    TransformerEncDec m(c);
    Session s(m.graph());
    std::mt19937 rng(3);
    HostTensor in, tg;
    copy_batch(m, rng, in, tg);
    return s.run({m.loss}, {{m.inputs, in}, {m.targets, tg}})[0].to_floats()[0];
  };
  const float none = training_loss(0.0f, 0.0f);
  EXPECT_EQ(training_loss(0.0f, -1.0f), none);
  EXPECT_NE(training_loss(0.0f, 0.5f), none);  // the edges drop with no other dropout
  EXPECT_NE(training_loss(0.5f, 0.0f), none);  // and the blocks without the edges
  EXPECT_NE(training_loss(0.5f, -1.0f), training_loss(0.5f, 0.0f));
}

TEST(TransformerEncDec, BadConfigurationsAreClearErrors) {
  for (auto change : std::vector<void (*)(EncDecConfig&)>{
           [](EncDecConfig& c) { c.norm = "batch"; },
           [](EncDecConfig& c) { c.ffn = "swish"; },
           [](EncDecConfig& c) { c.position = "rotary"; },
           [](EncDecConfig& c) { c.heads = 0; },
           [](EncDecConfig& c) { c.vocab = 2; },
           [](EncDecConfig& c) { c.dropout = 1.0f; },
           [](EncDecConfig& c) { c.label_smoothing = -0.1f; },
           [](EncDecConfig& c) { c.stack_dropout = 1.0f; },
       }) {
    EncDecConfig c = tiny();
    change(c);
    EXPECT_THROW(TransformerEncDec m(c), ValueError);
  }
}

}  // namespace
}  // namespace mtf::models
