// The central property: layouts do not change results. Graphs run on many
// meshes and layouts, with both mesh implementations, must match the
// one-processor run (1e-5 relative; random numbers bit for bit).
#include <cmath>

#include "test_util.h"

namespace mtf {
namespace {

using testing::expect_close;

struct MeshCase {
  const char* mesh;
  const char* layout;
};

MeshConfig config(const MeshCase& c, MeshImpl impl) {
  MeshConfig m;
  m.mesh_shape = MeshShape(c.mesh);
  m.layout = LayoutRules(c.layout);
  m.impl = impl;
  m.timeout = std::chrono::milliseconds(20000);
  return m;
}

// A small MLP with a training step: the mesh run's losses and final
// variables must match the one-processor run.
struct Mlp {
  Graph g;
  Mesh mesh{g, "mesh"};
  Dimension batch{"batch", 8}, rows{"rows", 4}, cols{"cols", 6}, hidden{"hidden", 16},
      classes{"classes", 4};
  Tensor x, y, loss;
  std::vector<Operation*> train;
  Mlp() {
    x = placeholder(mesh, Shape({batch, rows, cols}), float32, "x");
    y = placeholder(mesh, Shape({batch}), int32, "y");
    Tensor w1 = get_variable(mesh, "w1", Shape({rows, cols, hidden}));
    Tensor w2 = get_variable(mesh, "w2", Shape({hidden, classes}));
    Tensor h = relu(einsum({x, w1}, Shape({batch, hidden})));
    Tensor logits = einsum({h, w2}, Shape({batch, classes}));
    loss = reduce_mean(softmax_cross_entropy_with_logits(logits, one_hot(y, classes), classes));
    train = SgdOptimizer(0.5f).minimize(loss);
  }
  Feeds feeds(int step) {
    HostTensor xv = testing::random_tensor(x.shape(), 100 + step);
    std::vector<int32_t> labels(8);
    for (int i = 0; i < 8; ++i) labels[i] = (i * 3 + step) % 4;
    return {{x, xv}, {y, HostTensor::from_ints(y.shape(), labels)}};
  }
};

class MeshMlpTest : public ::testing::TestWithParam<std::tuple<MeshCase, MeshImpl>> {};

TEST_P(MeshMlpTest, TrainingMatchesOneProcessor) {
  const auto [mc, impl] = GetParam();
  Mlp ref, net;
  Session one(ref.g);
  Session mesh(net.g, config(mc, impl));
  for (int step = 0; step < 4; ++step) {
    const float l1 = one.run({ref.loss}, ref.feeds(step), ref.train)[0].data<float>()[0];
    const float l2 = mesh.run({net.loss}, net.feeds(step), net.train)[0].data<float>()[0];
    ASSERT_NEAR(l2, l1, 1e-5f * std::max(1.f, std::fabs(l1))) << "step " << step;
  }
  expect_close(mesh.variable_value("w1"), one.variable_value("w1"), "w1");
  expect_close(mesh.variable_value("w2"), one.variable_value("w2"), "w2");
}

// Reproducible mode: 30 steps, every loss and the final variables equal to
// the (reproducible) one-processor run's, bit for bit.
TEST_P(MeshMlpTest, ReproducibleTrainingIsOneProcessorBitForBit) {
  const auto [mc, impl] = GetParam();
  Mlp ref, net;
  MeshConfig one_config, mesh_config = config(mc, impl);
  one_config.reproducible = mesh_config.reproducible = true;
  Session one(ref.g, one_config);
  Session mesh(net.g, mesh_config);
  for (int step = 0; step < 30; ++step) {
    const float l1 = one.run({ref.loss}, ref.feeds(step), ref.train)[0].data<float>()[0];
    const float l2 = mesh.run({net.loss}, net.feeds(step), net.train)[0].data<float>()[0];
    ASSERT_EQ(l2, l1) << "step " << step;
  }
  for (const char* v : {"w1", "w2"})
    EXPECT_EQ(mesh.variable_value(v).to_floats(), one.variable_value(v).to_floats()) << v;
}

const MeshCase kMlpCases[] = {
    {"all:1", "batch:all"},
    {"all:2", "batch:all"},
    {"all:4", "batch:all"},
    {"all:8", "batch:all"},
    {"all:2", "hidden:all"},
    {"all:4", "hidden:all"},
    {"all:8", "hidden:all"},
    {"all:4", "classes:all"},
    {"all:3", "cols:all"},
    {"rows:2;cols:2", "batch:rows;hidden:cols"},
    {"rows:2;cols:4", "batch:rows;hidden:cols"},
    {"rows:4;cols:2", "hidden:rows;batch:cols"},
    {"a:2;b:2;c:2", "batch:a;hidden:b;cols:c"},
    {"a:2;b:2;c:2", "rows:a;classes:b;batch:c"},
};

INSTANTIATE_TEST_SUITE_P(Layouts, MeshMlpTest,
                         ::testing::Combine(::testing::ValuesIn(kMlpCases),
                                            ::testing::Values(MeshImpl::kSimd,
                                                              MeshImpl::kPlacement)),
                         [](const auto& info) {
                           std::string s =
                               std::string(std::get<0>(info.param).mesh) + "__" +
                               std::get<0>(info.param).layout + "__" +
                               (std::get<1>(info.param) == MeshImpl::kSimd ? "simd" : "placement");
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(MeshLoweringTest, DataParallelAllreducesWeightGradientsOverTheBatchAxis) {
  Mlp net;
  Session s(net.g, config({"all:4", "batch:all"}, MeshImpl::kSimd));
  const std::string text = s.program_text({net.loss}, net.train);
  // dW1 and dW2 are einsums over the split batch: allreduced over "all".
  int weight_grad_allreduces = 0;
  for (size_t at = 0; (at = text.find("allreduce", at)) != std::string::npos; ++at) {
    const std::string line = text.substr(at, text.find('\n', at) - at);
    if (line.find("[rows:4, cols:6, hidden:16]") != std::string::npos ||
        line.find("[hidden:16, classes:4]") != std::string::npos)
      ++weight_grad_allreduces;
  }
  EXPECT_EQ(weight_grad_allreduces, 2) << text;
  const std::string counters = s.counters_text({net.loss}, net.train);
  // 2*(n-1)/n of the bytes of w1 and w2 plus the loss' mean.
  EXPECT_NE(counters.find("allreduce/all"), std::string::npos) << counters;
}

TEST(MeshLoweringTest, ReproducibleModeGathersSplitSumsInsteadOfAllreducing) {
  Mlp net;
  MeshConfig c = config({"all:4", "batch:all"}, MeshImpl::kSimd);
  c.reproducible = true;
  Session s(net.g, c);
  const std::string text = s.program_text({net.loss}, net.train);
  // The weight gradients and the loss' mean sum over the split batch: the
  // batch is gathered and every processor sums it whole.
  EXPECT_EQ(text.find("allreduce"), std::string::npos) << text;
  EXPECT_NE(text.find("allgather"), std::string::npos) << text;
  EXPECT_NE(s.counters_text({net.loss}, net.train).find("allgather/all"), std::string::npos);
}

TEST(MeshLoweringTest, ModelParallelAllreducesTheSecondLayerOverTheHiddenAxis) {
  Mlp net;
  Session s(net.g, config({"all:4", "hidden:all"}, MeshImpl::kSimd));
  const std::string text = s.program_text({net.loss});
  // The forward logits einsum contracts the split hidden dimension.
  size_t at = text.find("allreduce einsum_1(");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("[batch:8, classes:4]"), std::string::npos) << line;
  // Ring allreduce: each processor sends 2*(n-1)/n of the 8*4 float32 (128 bytes).
  EXPECT_NE(line.find("over all, 192 bytes"), std::string::npos) << line;
  // Nothing is allreduced in the first layer's forward einsum.
  EXPECT_EQ(text.find("allreduce einsum("), std::string::npos) << text;
}

}  // namespace
}  // namespace mtf
