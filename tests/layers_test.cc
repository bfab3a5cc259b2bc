// Layers (include/mtf/layers.h) against references computed here by hand,
// their input gradients by finite differences, and their layout invariance.
#include "mtf/layers.h"

#include <cmath>

#include "expect_error.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::expect_near_vectors;
using testing::random_tensor;
using V = std::vector<Tensor>;

const Dimension kBatch{"batch", 2}, kLen{"length", 4}, kMem{"memory_length", 4},
    kModel{"d_model", 6}, kHeads{"heads", 2}, kKv{"d_kv", 3}, kFf{"d_ff", 8}, kVocab{"vocab", 8};

TEST(LayersTest, DenseMatchesHandComputation) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kBatch, kModel}), 1);
  layers::DenseOptions opt;
  opt.activation = [](const Tensor& t) { return tanh(t); };
  Tensor y = layers::dense(import_host(mesh, xv), kFf, "proj", opt);
  ASSERT_EQ(y.shape(), Shape({kBatch, kFf}));
  Session s(g);
  // Give the bias nonzero values so that it is checked too.
  s.set_variable_value("proj/bias", random_tensor(Shape({kFf}), 2));
  const auto w = s.variable_value("proj/kernel").to_floats();
  const auto b = s.variable_value("proj/bias").to_floats();
  const auto x = xv.to_floats();
  std::vector<float> want;
  for (int64_t i = 0; i < kBatch.size; ++i)
    for (int64_t j = 0; j < kFf.size; ++j) {
      double acc = b[j];
      for (int64_t k = 0; k < kModel.size; ++k) acc += x[i * kModel.size + k] * w[k * kFf.size + j];
      want.push_back(static_cast<float>(std::tanh(acc)));
    }
  expect_near_vectors(s.run(y).to_floats(), want);
  // Default initializer: normal with stddev 1/sqrt(fan_in); mean ~0.
  EXPECT_EQ(s.variable_value("proj/kernel").shape(), Shape({kModel, kFf}));
}

TEST(LayersTest, DenseWithExpertDimsKernelWeightsAndVariableDType) {
  const Dimension experts{"experts", 3};
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({experts, kBatch, kModel}), 3);
  const Tensor x = import_host(mesh, xv);
  layers::DenseOptions per_expert;
  per_expert.expert_dims = {experts};
  per_expert.variable_dtype = VariableDType(float32, bfloat16, float32);
  const Tensor y = layers::dense(x, {kFf}, {kModel}, "experts", per_expert);
  EXPECT_EQ(y.shape(), Shape({experts, kBatch, kFf}));
  // kernel_weights: the caller's tensor is the kernel, no variable made.
  const HostTensor wv = random_tensor(Shape({kFf, kModel}), 4);
  layers::DenseOptions given;
  given.kernel_weights = import_host(mesh, wv);
  given.use_bias = false;
  const Tensor z = layers::dense(x, {kFf}, {kModel}, "given", given);
  Session s(g, testing::mesh_config("x:3", "experts:x"));
  EXPECT_EQ(s.variable_value("experts/kernel").shape(), Shape({experts, kModel, kFf}));
  EXPECT_EQ(s.variable_value("experts/bias").shape(), Shape({experts, kFf}));
  for (const std::string& n : s.variable_names()) EXPECT_NE(n.rfind("given/", 0), 0u) << n;
  s.set_variable_value("experts/bias", random_tensor(Shape({experts, kFf}), 5).as_dtype(bfloat16));
  const auto w = s.variable_value("experts/kernel").to_floats();  // bfloat16 slices
  const auto b = s.variable_value("experts/bias").to_floats();
  const auto out = s.run({y, z});
  const auto xs = xv.to_floats(), ws = wv.to_floats();
  for (int64_t e = 0; e < 3; ++e)
    for (int64_t i = 0; i < kBatch.size; ++i)
      for (int64_t j = 0; j < kFf.size; ++j) {
        double acc = b[e * kFf.size + j], plain = 0;
        for (int64_t k = 0; k < kModel.size; ++k) {
          const double xk = xs[(e * kBatch.size + i) * kModel.size + k];
          acc += xk * w[(e * kModel.size + k) * kFf.size + j];
          plain += xk * ws[j * kModel.size + k];
        }
        const int64_t at = (e * kBatch.size + i) * kFf.size + j;
        EXPECT_NEAR(out[0].to_floats()[at], acc, 1e-4);
        EXPECT_NEAR(out[1].to_floats()[at], plain, 1e-4);
      }
  layers::DenseOptions wrong;
  wrong.kernel_weights = import_host(mesh, wv);
  EXPECT_THROW(layers::dense(x, {kVocab}, {kModel}, "wrong", wrong), ShapeError);
  layers::DenseOptions both;
  both.expert_dims = {kModel};
  EXPECT_THROW(layers::dense(x, {kFf}, {kModel}, "both", both), ShapeError);
}

TEST(LayersTest, VarianceScalingModesAndDistributions) {
  const std::vector<Dimension> in{{"i", 200}}, out{{"o", 50}};
  struct Case {
    layers::VarianceScaling v;
    double variance;
  };
  const std::vector<Case> cases = {
      {{2.0f, "fan_in", "normal"}, 2.0 / 200},
      {{1.0f, "fan_out", "truncated_normal"}, 1.0 / 50},
      {{1.0f, "fan_avg", "untruncated_normal"}, 1.0 / 125},
      {{3.0f, "fan_in", "uniform"}, 3.0 / 200},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.v.mode + " " + c.v.distribution);
    Graph g;
    Mesh mesh(g, "m");
    layers::get_or_create_variable(mesh, "w", Shape({in[0], out[0]}), c.v.for_kernel(in, out));
    Session s(g);
    const auto w = s.variable_value("w").to_floats();
    double sum = 0, sq = 0, biggest = 0;
    for (float v : w) {
      sum += v;
      sq += double(v) * v;
      biggest = std::max(biggest, std::fabs(double(v)));
    }
    const double mean = sum / w.size(), var = sq / w.size() - mean * mean;
    EXPECT_NEAR(var, c.variance, 0.05 * c.variance);  // 10000 draws
    if (c.v.distribution == "uniform") {
      EXPECT_LE(biggest, std::sqrt(3 * c.variance) + 1e-6);
    } else if (c.v.distribution != "untruncated_normal") {
      EXPECT_LE(biggest, 2 * std::sqrt(c.variance) / 0.87962566103423978 + 1e-6);
    }
  }
  EXPECT_THROW((layers::VarianceScaling{1.0f, "fan_sideways", "normal"}.for_kernel(in, out)),
               ValueError);
  EXPECT_THROW((layers::VarianceScaling{1.0f, "fan_in", "cauchy"}.for_kernel(in, out)), ValueError);
  EXPECT_THROW((layers::VarianceScaling{0.0f, "fan_in", "normal"}.for_kernel(in, out)), ValueError);
}

// Mesh TensorFlow's layers_test conv1d case: x [length 4, depth 2], a
// width-3 filter of known values, SAME padding, no bias.
TEST(LayersTest, Conv1dMatchesMeshTensorFlowsKnownValues) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = import_host(
      mesh, HostTensor::from_floats(Shape("length:4;depth:2"), {1, 0, 0, 1, 1, 1, 2, 1}));
  layers::ConvOptions options;
  options.use_bias = false;
  Tensor y = layers::conv1d(x, Dimension{"output", 2}, 3, "conv1d", options);
  EXPECT_EQ(y.shape(), Shape("length:4;output:2"));
  Session s(g);
  s.set_variable_value("conv1d/filter",
                       HostTensor::from_floats(Shape("conv1d_k0:3;depth:2;output:2"),
                                               {1, -1, 0, 0, 2, -2, -1, 1, 3, -3, -2, 2}));
  EXPECT_EQ(s.run(y).to_floats(), (std::vector<float>{0, 0, 1, -1, 5, -5, 4, -4}));
}

// conv2d / conv2d_transpose / pooling layers: shapes, variables, and a
// training step that lowers the loss under a spatially split layout.
TEST(LayersTest, ConvLayersBuildAndTrainOnASplitMesh) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:2;h:8;w:8;c:1"), float32, "x");
  layers::ConvOptions relu_options;
  relu_options.activation = [](const Tensor& t) { return relu(t); };
  Tensor h = layers::conv2d(x, Dimension{"d", 4}, {3, 3}, "c1", relu_options);
  EXPECT_EQ(h.shape(), Shape("b:2;h:8;w:8;d:4"));
  Tensor p = layers::max_pool2d(h);
  EXPECT_EQ(p.shape(), Shape("b:2;h:4;w:4;d:4"));
  layers::ConvOptions up;
  up.strides = {2, 2};
  Tensor u = layers::conv2d_transpose(p, Dimension{"c", 1}, {2, 2}, "up", up);
  EXPECT_EQ(u.shape(), x.shape());
  EXPECT_EQ(g.find_operation("up/filter")->output(0).shape(), Shape("up_k0:2;up_k1:2;c:1;d:4"));
  Tensor loss = reduce_mean(square(u - x));
  SgdOptimizer sgd(0.5f);
  const std::vector<Operation*> train = sgd.minimize(loss);
  MeshConfig mc;
  mc.mesh_shape = MeshShape("r:2;c:2");
  mc.layout = LayoutRules("h:r;w:c");
  Session s(g, mc);
  const HostTensor xv = random_tensor(x.shape(), 3, 0.f, 1.f);
  const float first = s.run(loss, {{x, xv}}).data<float>()[0];
  for (int i = 0; i < 20; ++i) s.run(std::vector<Tensor>{}, {{x, xv}}, train);
  EXPECT_LT(s.run(loss, {{x, xv}}).data<float>()[0], 0.8f * first);
  EXPECT_THROW(layers::conv2d(x, Dimension{"d", 4}, {3}, "bad"), ValueError);
  EXPECT_THROW(layers::max_pool2d(x, {2, 2, 2}), ValueError);
}

TEST(LayersTest, DenseOverSeveralDimensions) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape({kBatch, kHeads, kKv}));
  Tensor y = layers::dense(x, {kModel}, {kHeads, kKv}, "o");
  EXPECT_EQ(y.shape(), Shape({kBatch, kModel}));
  EXPECT_EQ(g.find_operation("o/kernel")->output(0).shape(), Shape({kHeads, kKv, kModel}));
  EXPECT_THROW(layers::dense(x, {kModel}, {kFf}, "bad"), ShapeError);   // not in the input
  EXPECT_THROW(layers::dense(x, {kHeads}, {kKv}, "bad2"), ShapeError);  // new dim already there
}

TEST(LayersTest, ReusingANameSharesTheVariablesAndAnotherShapeIsAnError) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape({kBatch, kModel}));
  Tensor a = layers::dense(x, kFf, "shared");
  Tensor b = layers::dense(x, kFf, "shared");
  EXPECT_EQ(g.trainable_variables().size(), 2u);  // kernel and bias, once
  const HostTensor xv = random_tensor(x.shape(), 3);
  Session s(g);
  auto out = s.run({a, b}, {{x, xv}});
  EXPECT_EQ(out[0].to_floats(), out[1].to_floats());
  testing::expect_error<ShapeError>(
      [&] {
        layers::dense(x, Dimension{"d_ff", 5}, "shared");
      },
      {"shared/kernel"});
}

TEST(LayersTest, LayerNormMatchesHandComputation) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kBatch, kModel}), 4, -3.f, 3.f);
  Tensor y = layers::layer_norm(import_host(mesh, xv), kModel, "ln");
  Session s(g);
  s.set_variable_value("ln/scale", random_tensor(Shape({kModel}), 5, 0.5f, 1.5f));
  s.set_variable_value("ln/bias", random_tensor(Shape({kModel}), 6));
  const auto x = xv.to_floats();
  const auto sc = s.variable_value("ln/scale").to_floats();
  const auto bi = s.variable_value("ln/bias").to_floats();
  std::vector<float> want;
  for (int64_t i = 0; i < kBatch.size; ++i) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < kModel.size; ++k) mean += x[i * kModel.size + k];
    mean /= kModel.size;
    for (int64_t k = 0; k < kModel.size; ++k) var += std::pow(x[i * kModel.size + k] - mean, 2);
    var /= kModel.size;
    for (int64_t k = 0; k < kModel.size; ++k)
      want.push_back(static_cast<float>(
          (x[i * kModel.size + k] - mean) / std::sqrt(var + 1e-6) * sc[k] + bi[k]));
  }
  expect_near_vectors(s.run(y).to_floats(), want);
}

// Mesh TensorFlow's layers_test case: per channel over the batch,
// [[0, 1, 2], [4, 5, 6]] normalizes to [[-1, -1, -1], [1, 1, 1]], and so
// does a second batch norm of (that * 2 + 1).
TEST(LayersTest, BatchNormKnownValuesAndMovingStatistics) {
  Graph g;
  Mesh mesh(g, "m");
  const Dimension batch{"batch", 2}, channels{"channels", 3};
  const HostTensor xv = HostTensor::from_floats(Shape({batch, channels}), {0, 1, 2, 4, 5, 6});
  const layers::BatchNorm bn0 =
      layers::batch_norm(import_host(mesh, xv), true, {batch}, "bn0", 0.95f, 1e-6f);
  const layers::BatchNorm bn1 =
      layers::batch_norm(bn0.output * 2.f + 1.f, true, {batch}, "bn1", 0.95f, 1e-6f);
  Session s(g);
  std::vector<Operation*> updates = bn0.updates;
  updates.insert(updates.end(), bn1.updates.begin(), bn1.updates.end());
  const auto out = s.run({bn0.output, bn1.output}, {}, updates);
  expect_near_vectors(out[0].to_floats(), {-1, -1, -1, 1, 1, 1});
  expect_near_vectors(out[1].to_floats(), {-1, -1, -1, 1, 1, 1});
  // Moving statistics took 5% of the batch's: mean (2, 3, 4), variance 4.
  expect_near_vectors(s.variable_value("bn0/moving_mean").to_floats(), {0.1f, 0.15f, 0.2f});
  expect_near_vectors(s.variable_value("bn0/moving_variance").to_floats(),
                      {0.95f + 0.2f, 0.95f + 0.2f, 0.95f + 0.2f});
  // Evaluation normalizes with the moving statistics.
  const layers::BatchNorm eval =
      layers::batch_norm(import_host(mesh, xv), false, {batch}, "bn0", 0.95f, 1e-6f);
  EXPECT_TRUE(eval.updates.empty());
  const auto e = s.run(eval.output).to_floats();
  EXPECT_NEAR(e[3], (4 - 0.1) / std::sqrt(1.15), 1e-5);
  EXPECT_THROW(layers::batch_norm(import_host(mesh, xv), true, {Dimension{"h", 2}}, "bad"),
               ShapeError);
}

TEST(LayersTest, EmbeddingPicksRows) {
  Graph g;
  Mesh mesh(g, "m");
  HostTensor ids(Shape({kBatch, kLen}), int32);
  const int32_t id_values[] = {0, 7, 3, 3, 5, 1, 0, 6};
  std::copy(std::begin(id_values), std::end(id_values), ids.data<int32_t>());
  Tensor e = layers::embedding(import_host(mesh, ids), kVocab, kModel, "emb");
  ASSERT_EQ(e.shape(), Shape({kBatch, kLen, kModel}));
  Session s(g);
  const auto table = s.variable_value("emb/weights").to_floats();
  const auto got = s.run(e).to_floats();
  for (int t = 0; t < 8; ++t)
    for (int64_t k = 0; k < kModel.size; ++k)
      EXPECT_EQ(got[t * kModel.size + k], table[id_values[t] * kModel.size + k]);
}

TEST(LayersTest, EmbeddingWithAnEnsembleDimensionAndItsWeights) {
  const Dimension ens{"ensemble", 2}, pos{"pos", 3};
  Graph g;
  Mesh mesh(g, "m");
  const Tensor ids =
      import_host(mesh, HostTensor::from_ints(Shape({ens, pos}), {0, 7, 3, 7, 1, 0}));
  const Tensor y = layers::embedding(ids, kVocab, kModel, "emb", 1.0f, VariableDType(), ens);
  const Tensor w = layers::embedding_weights(mesh, kVocab, kModel, VariableDType(), "emb", ens);
  EXPECT_EQ(&w.op(),
            &layers::embedding_weights(mesh, kVocab, kModel, VariableDType(), "emb", ens).op());
  EXPECT_EQ(y.shape(), Shape({ens, pos, kModel}));
  Session s(g, testing::mesh_config("x:2", "ensemble:x"));
  const auto table = s.variable_value("emb/weights").to_floats();  // [ensemble, vocab, model]
  const auto got = s.run(y).to_floats();
  const int ids_v[] = {0, 7, 3, 7, 1, 0};
  for (int e = 0; e < 2; ++e)
    for (int p = 0; p < 3; ++p)
      for (int d = 0; d < kModel.size; ++d)
        EXPECT_EQ(got[(e * 3 + p) * kModel.size + d],
                  table[(e * kVocab.size + ids_v[e * 3 + p]) * kModel.size + d]);
  const Tensor flat = import_host(mesh, HostTensor::from_ints(Shape({pos}), {1, 2, 3}));
  EXPECT_THROW(layers::embedding(flat, kVocab, kModel, "emb2", 1.0f, VariableDType(), ens),
               ShapeError);
}

TEST(LayersTest, SeparableConv1dMatchesItsDefinition) {
  const Dimension len{"length", 5}, depth{"depth", 3}, out{"out", 2};
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kBatch, len, depth}), 11);
  const Tensor x = import_host(mesh, xv);
  std::vector<HostTensor> wv;
  std::vector<Tensor> w;
  for (int k = 0; k < 3; ++k) {
    wv.push_back(random_tensor(Shape({depth}), 20 + k));
    w.push_back(import_host(mesh, wv.back()));
  }
  const Tensor y = layers::separable_conv1d(x, out, -1, 1, "sep", 1.0f, 1.0f, true, w);
  EXPECT_EQ(y.shape(), Shape({kBatch, len, out}));
  const Tensor own = layers::separable_conv1d(x, out, 0, 2, "own");
  EXPECT_EQ(own.shape(), y.shape());
  Session s(g, testing::mesh_config("x:2", "batch:x"));
  s.set_variable_value("sep/depthwise_dense_0/bias", random_tensor(Shape({depth}), 30));
  const auto b0 = s.variable_value("sep/depthwise_dense_0/bias").to_floats();
  const auto pw = s.variable_value("sep/pointwise_dense/kernel").to_floats();  // [depth, out]
  const auto pb = s.variable_value("sep/pointwise_dense/bias").to_floats();
  const auto got = s.run(y).to_floats();
  const auto xs = xv.to_floats();
  for (int b = 0; b < kBatch.size; ++b)
    for (int i = 0; i < 5; ++i)
      for (int o = 0; o < 2; ++o) {
        double acc = pb[o];
        for (int c = 0; c < 3; ++c) {
          double dw = b0[c];
          for (int k = 0; k < 3; ++k) {
            const int at = i + (k - 1);
            if (at >= 0 && at < 5) dw += wv[k].to_floats()[c] * xs[(b * 5 + at) * 3 + c];
          }
          acc += dw * pw[c * 2 + o];
        }
        EXPECT_NEAR(got[(b * 5 + i) * 2 + o], acc, 1e-5);
      }
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(s.variable_value("own/depthwise_dense_" + std::to_string(k) + "/kernel").shape(),
              Shape({depth}));
  EXPECT_THROW(layers::separable_conv1d(x, out, 1, 0, "bad"), ValueError);
  EXPECT_THROW(layers::separable_conv1d(x, out, -1, 1, "bad2", 1.0f, 1.0f, true, {w[0]}),
               ValueError);
}

TEST(LayersTest, AutoregressiveMask) {
  Graph g;
  Mesh mesh(g, "m");
  const auto m = testing::eval(layers::attention_mask_autoregressive(mesh, kLen, kMem));
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(m[q * 4 + k], k > q ? -1e9f : 0.f) << q << "," << k;
  EXPECT_THROW(layers::attention_mask_autoregressive(mesh, kLen, Dimension{"memory_length", 5}),
               ShapeError);
}

// Reference multi-head self-attention with a causal mask, by loops.
std::vector<float> reference_attention(const std::vector<float>& x, const Session& s) {
  const auto wq = s.variable_value("att/q").to_floats(), wk = s.variable_value("att/k").to_floats(),
             wv = s.variable_value("att/v").to_floats(), wo = s.variable_value("att/o").to_floats();
  const int64_t B = kBatch.size, L = kLen.size, D = kModel.size, H = kHeads.size, K = kKv.size;
  auto proj = [&](const std::vector<float>& w, int64_t b, int64_t l, int64_t h, int64_t k) {
    double acc = 0;
    for (int64_t d = 0; d < D; ++d) acc += x[(b * L + l) * D + d] * w[(d * H + h) * K + k];
    return acc;
  };
  std::vector<float> out(B * L * D, 0.f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t q = 0; q < L; ++q) {
        std::vector<double> logits(L);
        double mx = -1e300;
        for (int64_t m = 0; m < L; ++m) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += proj(wq, b, q, h, k) * proj(wk, b, m, h, k);
          logits[m] = m > q ? acc - 1e9 : acc;
          mx = std::max(mx, logits[m]);
        }
        double z = 0;
        for (double& l : logits) z += (l = std::exp(l - mx));
        for (int64_t k = 0; k < K; ++k) {
          double o = 0;
          for (int64_t m = 0; m < L; ++m) o += logits[m] / z * proj(wv, b, m, h, k);
          for (int64_t d = 0; d < D; ++d) out[(b * L + q) * D + d] += o * wo[(h * K + k) * D + d];
        }
      }
  return out;
}

Tensor self_attention(const Tensor& x) {
  const Tensor mask = layers::attention_mask_autoregressive(x.mesh(), kLen, kMem);
  return layers::multihead_attention(x, rename_dimension(x, kLen.name, kMem.name), mask,
                                     {kHeads, kKv, kMem}, "att");
}

TEST(LayersTest, MultiheadAttentionMatchesHandComputation) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kBatch, kLen, kModel}), 7);
  Tensor y = self_attention(import_host(mesh, xv));
  ASSERT_EQ(y.shape(), Shape({kBatch, kLen, kModel}));
  Session s(g);
  expect_near_vectors(s.run(y).to_floats(), reference_attention(xv.to_floats(), s), 2e-5f);
  EXPECT_EQ(s.variable_value("att/q").shape(), Shape({kModel, kHeads, kKv}));
  EXPECT_EQ(s.variable_value("att/o").shape(), Shape({kHeads, kKv, kModel}));
}

TEST(LayersTest, CausalAttentionIgnoresLaterPositions) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape({kBatch, kLen, kModel}));
  Tensor y = self_attention(x);
  Session s(g);
  HostTensor a = random_tensor(x.shape(), 8);
  HostTensor b = a.clone();
  // Change only the last position.
  for (int64_t bb = 0; bb < kBatch.size; ++bb)
    for (int64_t d = 0; d < kModel.size; ++d)
      b.data<float>()[(bb * kLen.size + kLen.size - 1) * kModel.size + d] += 1.f;
  const auto ya = s.run(y, {{x, a}}).to_floats(), yb = s.run(y, {{x, b}}).to_floats();
  for (int64_t bb = 0; bb < kBatch.size; ++bb)
    for (int64_t l = 0; l < kLen.size; ++l)
      for (int64_t d = 0; d < kModel.size; ++d) {
        const int64_t i = (bb * kLen.size + l) * kModel.size + d;
        if (l < kLen.size - 1) {
          EXPECT_EQ(ya[i], yb[i]) << "position " << l << " saw a later one";
        } else if (d == 0) {
          EXPECT_NE(ya[i], yb[i]);
        }
      }
}

TEST(LayersTest, DenseReluDenseMatchesHandComputation) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kBatch, kModel}), 9);
  Tensor y = layers::dense_relu_dense(import_host(mesh, xv), kFf, "ffn");
  Session s(g);
  const auto wi = s.variable_value("ffn/wi/kernel").to_floats();
  const auto wo = s.variable_value("ffn/wo/kernel").to_floats();
  EXPECT_EQ(g.find_operation("ffn/wi/bias"), nullptr);
  const auto x = xv.to_floats();
  std::vector<float> want(kBatch.size * kModel.size, 0.f);
  for (int64_t i = 0; i < kBatch.size; ++i)
    for (int64_t f = 0; f < kFf.size; ++f) {
      double h = 0;
      for (int64_t k = 0; k < kModel.size; ++k) h += x[i * kModel.size + k] * wi[k * kFf.size + f];
      h = std::max(h, 0.0);
      for (int64_t k = 0; k < kModel.size; ++k)
        want[i * kModel.size + k] += static_cast<float>(h * wo[f * kModel.size + k]);
    }
  expect_near_vectors(s.run(y).to_floats(), want);
}

TEST(LayersTest, CrossEntropyMeanWithZLoss) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor lv = random_tensor(Shape({kBatch, kVocab}), 10, -2.f, 2.f);
  HostTensor tv(Shape({kBatch}), int32);
  tv.data<int32_t>()[0] = 3;
  tv.data<int32_t>()[1] = 6;
  const float z = 1e-2f;
  Tensor loss =
      layers::softmax_cross_entropy_mean(import_host(mesh, lv), import_host(mesh, tv), kVocab, z);
  const auto l = lv.to_floats();
  double want = 0;
  for (int i = 0; i < 2; ++i) {
    double mx = -1e300, sum = 0;
    for (int v = 0; v < 8; ++v) mx = std::max(mx, double(l[i * 8 + v]));
    for (int v = 0; v < 8; ++v) sum += std::exp(l[i * 8 + v] - mx);
    const double lse = mx + std::log(sum);
    want += lse - l[i * 8 + tv.data<int32_t>()[i]] + z * lse * lse;
  }
  EXPECT_NEAR(testing::eval(loss)[0], want / 2, 1e-5);
  EXPECT_THROW(
      layers::softmax_cross_entropy_mean(import_host(mesh, lv), import_host(mesh, lv), kVocab),
      DTypeError);
}

TEST(LayersGradientTest, InputGradientsByFiniteDifferences) {
  SCOPED_TRACE("dense");
  check_gradients({Shape({kBatch, kModel})}, [](const V& x) {
    layers::DenseOptions o;
    o.activation = [](const Tensor& t) { return tanh(t); };
    return layers::dense(x[0], kFf, "d", o);
  });
  SCOPED_TRACE("layer_norm");
  check_gradients({Shape({kBatch, kModel})},
                  [](const V& x) { return layers::layer_norm(x[0] * 3.f, kModel, "ln"); });
  SCOPED_TRACE("attention");
  check_gradients({Shape({kBatch, kLen, kModel})},
                  [](const V& x) { return self_attention(x[0] * 2.f); });
  SCOPED_TRACE("dense_relu_dense");
  // A small step: the hidden relu's kinks are not under our control.
  check_gradients(
      {Shape({kBatch, kModel})},
      [](const V& x) { return layers::dense_relu_dense(x[0] + 0.3f, kFf, "ffn"); },
      testing::uniform(-1.f, 1.f), 1e-3f);
  SCOPED_TRACE("cross-entropy");
  check_gradients({Shape({kBatch, kVocab})}, [](const V& x) {
    HostTensor t(Shape({kBatch}), int32);
    t.data<int32_t>()[0] = 1;
    t.data<int32_t>()[1] = 4;
    return layers::softmax_cross_entropy_mean(x[0] * 2.f, import_host(x[0].mesh(), t), kVocab,
                                              1e-1f);
  });
}

// A Transformer block with an embedding and a vocabulary projection: its
// loss and every variable's gradient under data-, model- and mixed-parallel
// layouts on both mesh implementations equal the one-processor run.
TEST(LayersMeshTest, TransformerBlockIsLayoutInvariant) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor ids = placeholder(mesh, Shape({kBatch, kLen}), int32, "ids");
  Tensor targets = placeholder(mesh, Shape({kBatch, kLen}), int32, "targets");
  Tensor x = layers::embedding(ids, kVocab, kModel, "emb");
  x = x + self_attention(layers::layer_norm(x, kModel, "ln1"));
  x = x + layers::dense_relu_dense(layers::layer_norm(x, kModel, "ln2"), kFf, "ffn");
  Tensor logits = layers::dense(layers::layer_norm(x, kModel, "ln3"), kVocab, "logits");
  Tensor loss = layers::softmax_cross_entropy_mean(logits, targets, kVocab, 1e-4f);
  const std::vector<Tensor>& vars = g.trainable_variables();
  std::vector<Tensor> fetches = gradients({loss}, vars);
  fetches.insert(fetches.begin(), loss);
  HostTensor idv(ids.shape(), int32), tv(targets.shape(), int32);
  for (int i = 0; i < 8; ++i) {
    idv.data<int32_t>()[i] = (i * 5 + 1) % 8;
    tv.data<int32_t>()[i] = (i * 3 + 2) % 8;
  }
  const Feeds feeds = {{ids, idv}, {targets, tv}};
  Session one(g);
  const std::vector<HostTensor> want = one.run(fetches, feeds);
  struct Case {
    const char* mesh;
    const char* layout;
  };
  const Case cases[] = {
      {"all:2", "batch:all"},
      {"all:2", "heads:all;d_ff:all;vocab:all"},
      {"rows:2;cols:2", "batch:rows;heads:cols;d_ff:cols;vocab:cols"},
      {"rows:2;cols:2", "d_model:rows;vocab:cols;heads:cols"},
  };
  for (const Case& c : cases) {
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      SCOPED_TRACE(std::string(c.mesh) + " " + c.layout +
                   (impl == MeshImpl::kSimd ? " simd" : " placement"));
      MeshConfig cfg;
      cfg.mesh_shape = MeshShape(c.mesh);
      cfg.layout = LayoutRules(c.layout);
      cfg.impl = impl;
      Session s(g, cfg);
      const std::vector<HostTensor> got = s.run(fetches, feeds);
      for (size_t i = 0; i < got.size(); ++i)
        testing::expect_close(got[i], want[i], i == 0 ? "loss" : vars[i - 1].name());
    }
  }
}

}  // namespace
}  // namespace mtf
