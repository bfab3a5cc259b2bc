// The Transformer LM of examples/transformer_lm: its parameter count against
// the paper's table and against the variables it creates, its training
// trajectory under data-, model- and mixed-parallel layouts, and its corpus
// reader.
#include "models/transformer.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "models/corpus.h"
#include "models/transformer_decoder.h"
#include "test_util.h"
#include "tiny_transformer.h"

namespace mtf {
namespace {

TEST(TransformerTest, ParameterCountsMatchThePaper) {
  const struct {
    int64_t d_ff, heads;
    double billions;
  } rows[] = {{4096, 4, 0.14},   {8192, 8, 0.22},     {16384, 16, 0.37},  {32768, 32, 0.67},
              {65536, 64, 1.28}, {131072, 128, 2.48}, {262144, 256, 4.90}};
  for (const auto& r : rows) {
    const double got = models::TransformerConfig::paper(r.d_ff, r.heads).num_parameters() / 1e9;
    EXPECT_NEAR(got, r.billions, 0.005 + 1e-9) << "d_ff " << r.d_ff << " heads " << r.heads;
  }
}

TEST(TransformerTest, ParameterCountIsTheVariablesSize) {
  models::TransformerConfig c;
  c.layers = 3;
  c.d_model = 16;
  c.d_ff = 24;
  c.heads = 2;
  c.d_kv = 4;
  c.vocab = 32;
  c.length = 8;
  c.batch = 2;
  for (int64_t experts : {0, 3}) {
    c.moe_experts = experts;
    models::TransformerLm lm(c);
    int64_t n = 0;
    for (const Tensor& v : lm.graph().trainable_variables()) n += v.shape().num_elements();
    EXPECT_EQ(n, c.num_parameters()) << experts << " experts";
  }
}

// Four Adafactor steps on fixed windows; returns the losses.
std::vector<double> trajectory(const MeshConfig& mesh, bool recompute = false,
                               DType activation = float32) {
  models::TransformerConfig c = testing::tiny_transformer_config();
  c.dropout = 0.1f;
  c.recompute = recompute;
  c.variable_dtype = VariableDType(float32, float32, activation);
  models::TransformerLm lm(c);
  Session s(lm.graph(), mesh);
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      in.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + step * 3) % 64);
      tg.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + step * 3 + 1) % 64);
    }
    losses.push_back(
        s.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops)[0].data<float>()[0]);
  }
  losses.push_back(s.run(lm.eval_loss, {{lm.inputs, in}, {lm.targets, tg}}).data<float>()[0]);
  return losses;
}

TEST(TransformerTest, SameLossTrajectoryUnderEveryLayout) {
  const std::vector<double> want = trajectory({});
  EXPECT_LT(want[3], want[0]);  // it learns
  const struct {
    const char* mesh;
    const char* layout;
  } cases[] = {
      {"batch:4", "batch:batch"},                                             // data-parallel
      {"model:4", "heads:model;d_ff:model;vocab:model"},                      // model-parallel
      {"batch:2;model:2", "batch:batch;vocab:model;d_ff:model;heads:model"},  // the paper's
      {"rows:2;cols:2", "d_model:rows;heads:cols"},
      {"rows:2;cols:2", "length:rows;d_ff:cols;vocab:cols"},
  };
  for (const auto& c : cases) {
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      SCOPED_TRACE(std::string(c.mesh) + " " + c.layout);
      MeshConfig m;
      m.mesh_shape = MeshShape(c.mesh);
      m.layout = LayoutRules(c.layout);
      m.impl = impl;
      const std::vector<double> got = trajectory(m);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << "step " << i;
    }
  }
}

// bfloat16 activations with float32 weights (the paper's setting): the
// losses follow float32's within bfloat16's precision, every layout and
// both mesh implementations give the one processor's bits in reproducible
// mode, recompute_grad changes none, and decoding runs from the same graph.
TEST(TransformerTest, BFloat16ActivationsTrainLikeFloat32AndReproduce) {
  MeshConfig one;
  one.reproducible = true;
  const std::vector<double> f32 = trajectory(one), bf16 = trajectory(one, false, bfloat16);
  for (size_t i = 0; i < f32.size(); ++i) EXPECT_NEAR(bf16[i], f32[i], 0.02 * f32[i]) << i;
  EXPECT_NE(bf16, f32);  // bfloat16 did run
  for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    MeshConfig paper = one;
    paper.mesh_shape = MeshShape("batch:2;model:2");
    paper.layout = LayoutRules("batch:batch;vocab:model;d_ff:model;heads:model");
    paper.impl = impl;
    EXPECT_EQ(trajectory(paper, false, bfloat16), bf16) << mesh_impl_name(impl);
  }
  EXPECT_EQ(trajectory(one, true, bfloat16), bf16);
  models::TransformerConfig c = testing::tiny_transformer_config();
  c.variable_dtype = VariableDType(float32, float32, bfloat16);
  models::TransformerLm lm(c);
  models::TransformerDecoder decoder(lm, 1);
  Session s(lm.graph(), one);
  const std::vector<float> logits = decoder.step(s, {3}, 0);
  EXPECT_EQ(static_cast<int64_t>(logits.size()), c.vocab);
  for (float v : logits) EXPECT_TRUE(std::isfinite(v));
}

// Recomputing each layer's activations (dropout included) changes no bit,
// on one processor and under the paper's layout.
TEST(TransformerTest, RecomputedLayersGiveTheSameTrajectory) {
  MeshConfig one, paper;
  one.reproducible = paper.reproducible = true;
  paper.mesh_shape = MeshShape("batch:2;model:2");
  paper.layout = LayoutRules("batch:batch;vocab:model;d_ff:model;heads:model");
  for (const MeshConfig* m : {&one, &paper}) {
    const std::vector<double> kept = trajectory(*m), again = trajectory(*m, true);
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(again[i], kept[i]) << "step " << i;
  }
}

// A mixture of experts in every feed-forward block: it learns, and layouts
// splitting the experts (or their hidden dimension) change no bit.
TEST(TransformerTest, MixtureOfExpertsTrajectoryUnderLayouts) {
  auto trajectory_moe = [](const MeshConfig& mesh) {
    models::TransformerConfig c = testing::tiny_transformer_config();
    c.moe_experts = 4;
    models::TransformerLm lm(c);
    Session s(lm.graph(), mesh);
    HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
    std::vector<float> losses;
    for (int step = 0; step < 4; ++step) {
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        in.data<int32_t>()[i] = static_cast<int32_t>((i * 5) % 64);  // the same windows
        tg.data<int32_t>()[i] = static_cast<int32_t>((i * 5 + 1) % 64);
      }
      losses.push_back(s.run(lm.loss, {{lm.inputs, in}, {lm.targets, tg}}).to_floats()[0]);
      s.run({}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops);
    }
    return losses;
  };
  MeshConfig one;
  one.reproducible = true;
  const std::vector<float> want = trajectory_moe(one);
  EXPECT_LT(want[3], want[0]);
  for (const auto& [m, l] : std::vector<std::pair<const char*, const char*>>{
           {"model:4", "experts:model"},
           {"batch:4", "batch:batch;experts:batch"},  // dispatch and combine by alltoall
           {"batch:2;model:2", "batch:batch;experts:model;heads:model;vocab:model"},
           {"batch:2;model:2", "batch:batch;d_ff:model"}}) {
    SCOPED_TRACE(std::string(m) + " " + l);
    MeshConfig mc = one;
    mc.mesh_shape = MeshShape(m);
    mc.layout = LayoutRules(l);
    EXPECT_EQ(trajectory_moe(mc), want);
  }
  models::TransformerConfig bad = testing::tiny_transformer_config();
  bad.moe_experts = 1;
  EXPECT_THROW(bad.validate(), ValueError);
}

TEST(TransformerTest, BadConfigIsAnError) {
  models::TransformerConfig c;
  c.heads = 0;
  EXPECT_THROW(models::TransformerLm lm(c), ValueError);
}

TEST(CorpusTest, SplitsEntriesAndSkipsIndexesAndLinks) {
  const std::string dir = ::testing::TempDir() + "/corpus_test";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  {
    std::ofstream(dir + "/a") << "one\n%\ntwo\n%\nthree\n%\nfour\n%\n";
    std::ofstream(dir + "/a.dat") << "binary index";
    std::ofstream bin(dir + "/bin", std::ios::binary);
    bin.write("x\0y", 3);
  }
  std::system(("ln -s a " + dir + "/a.u8").c_str());
  const models::Corpus c = models::load_text_corpus(dir, 2);
  EXPECT_EQ(c.files, std::vector<std::string>{"a"});
  EXPECT_EQ(c.train, "one\n%\nthree\n%\n");
  EXPECT_EQ(c.heldout, "two\n%\nfour\n%\n");
  EXPECT_THROW(models::load_text_corpus(dir + "/missing"), IoError);
}

TEST(CorpusTest, WindowsAndSamplerState) {
  const std::string text = "abcdefghijklmnopqrstuvwxyz";
  HostTensor in(Shape("batch:2;length:4"), int32), tg(Shape("batch:2;length:4"), int32);
  models::window_batch(text, 1, in, tg);  // windows at 8 and 12
  EXPECT_EQ(in.data<int32_t>()[0], 'i');
  EXPECT_EQ(tg.data<int32_t>()[3], 'm');
  EXPECT_EQ(in.data<int32_t>()[4], 'm');
  EXPECT_EQ(models::window_batches(text, 2, 4), 3);
  models::WindowSampler a(text, 2, 4, 9), b(text, 2, 4, 9);
  HostTensor x(in.shape(), int32), y(in.shape(), int32);
  a.next(x, y);
  a.next(x, y);
  const std::string st = a.state();
  a.next(x, y);
  b.restore(st);
  b.next(in, tg);
  EXPECT_EQ(in.to_floats(), x.to_floats());
  EXPECT_THROW(b.restore("x"), ValueError);
  // Baseline: a text of one repeated byte costs ~0 bits under its own frequencies.
  EXPECT_LT(models::unigram_bits_per_byte(std::string(1000, 'a'), std::string(100, 'a')), 0.5);
}

// A process's rows of a batch (sharded input) are the whole batch's rows,
// and the draws stay in step for the batches after.
TEST(CorpusTest, SamplerRowsAreTheBatchsRows) {
  const std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  models::WindowSampler whole(text, 4, 5, 3), part(text, 4, 5, 3);
  HostTensor in(Shape("batch:4;length:5"), int32), tg(Shape("batch:4;length:5"), int32);
  HostTensor in2(Shape("batch:2;length:5"), int32), tg2(Shape("batch:2;length:5"), int32);
  for (int step = 0; step < 3; ++step) {
    whole.next(in, tg);
    part.next_rows(in2, tg2, 2);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(in2.data<int32_t>()[i], in.data<int32_t>()[10 + i]) << "step " << step;
      EXPECT_EQ(tg2.data<int32_t>()[i], tg.data<int32_t>()[10 + i]) << "step " << step;
    }
  }
  EXPECT_EQ(part.state(), whole.state());
  EXPECT_THROW(part.next_rows(in2, tg2, 3), ValueError);  // rows 3..4 of a batch of 4
}

}  // namespace
}  // namespace mtf
