// Gradient accumulation: N = 1, 2, 4 microbatches update as the whole batch
// does (to float rounding), on one core and on meshes; in reproducible mode
// every layout gives the same bits for a given N; bad counts are errors.
#include "expect_error.h"
#include "test_util.h"

namespace mtf {
namespace {

constexpr int64_t kBatch = 8;
constexpr int kSteps = 3;

// A two-layer network on `rows` examples: mean over the rows of
// sum((relu(x w1) w2 - y)^2), trained with Adam (its update is not linear in
// the gradient, so a wrong mean shows).
struct Net {
  Graph g;
  Mesh mesh{g, "m"};
  Tensor x, y, loss;
  Tensor per_row;  // [b]: each row's squared error
  explicit Net(int64_t rows) {
    const Dimension b{"b", rows}, r{"r", 4}, h{"h", 6}, c{"c", 2};
    x = placeholder(mesh, Shape({b, r}), float32, "x");
    y = placeholder(mesh, Shape({b, c}), float32, "y");
    const Tensor w1 = get_variable(mesh, "w1", Shape({r, h}), Initializer::normal(0, 0.5f));
    const Tensor w2 = get_variable(mesh, "w2", Shape({h, c}), Initializer::normal(0, 0.5f));
    const Tensor out = einsum({relu(einsum({x, w1}, Shape({b, h}))), w2}, Shape({b, c}));
    per_row = reduce_sum(square(out - y), Shape({b}));
    loss = reduce_sum(per_row) * (1.0f / static_cast<float>(rows));
  }
};

// Rows [first, first + rows) of the step's batch.
HostTensor rows_of(const Shape& whole, uint64_t seed, int64_t first, int64_t rows) {
  const std::vector<float> all = testing::random_tensor(whole, seed).to_floats();
  const int64_t width = whole[1].size;
  std::vector<float> part(all.begin() + first * width, all.begin() + (first + rows) * width);
  return HostTensor::from_floats(Shape({{"b", rows}, whole[1]}), part);
}

// The weights after kSteps steps of kBatch examples in `microbatches` parts
// (0: the plain whole-batch step).
std::vector<float> train(int64_t microbatches, const MeshConfig& mc) {
  const int64_t rows = microbatches == 0 ? kBatch : kBatch / microbatches;
  Net net(rows);
  AdamOptimizer adam(0.05f);
  std::vector<Operation*> accumulate, apply;
  if (microbatches == 0) {
    accumulate = adam.minimize(net.loss);
  } else {
    GradientAccumulation acc(adam, net.loss, microbatches);
    accumulate = acc.accumulate_ops();
    apply = acc.apply_ops();
  }
  Session s(net.g, mc);
  for (int step = 0; step < kSteps; ++step) {
    for (int64_t first = 0; first < kBatch; first += rows) {
      s.run({net.loss},
            {{net.x, rows_of(Shape("b:8;r:4"), 10 + step, first, rows)},
             {net.y, rows_of(Shape("b:8;c:2"), 20 + step, first, rows)}},
            accumulate);
    }
    if (!apply.empty()) s.run({}, {}, apply);
  }
  std::vector<float> w = s.variable_value("w1").to_floats();
  for (float v : s.variable_value("w2").to_floats()) w.push_back(v);
  return w;
}

TEST(GradientAccumulationTest, MicrobatchesUpdateAsTheWholeBatch) {
  const std::vector<float> whole = train(0, testing::mesh_config("", ""));
  for (int64_t n : {1, 2, 4}) {
    SCOPED_TRACE(n);
    const std::vector<float> got = train(n, testing::mesh_config("", ""));
    ASSERT_EQ(got.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(got[i], whole[i], 2e-6) << i;
    if (n == 1) {
      EXPECT_EQ(got, whole);  // N = 1 is the plain step
    }
  }
  // The test would notice accumulation doing nothing: training moved w.
  Net untrained(kBatch);
  Session s(untrained.g);
  EXPECT_GT(std::fabs(s.variable_value("w1").to_floats()[0] - whole[0]), 1e-3);
}

TEST(GradientAccumulationTest, EveryLayoutGivesTheSameBitsForAGivenCount) {
  for (int64_t n : {2, 4}) {
    SCOPED_TRACE(n);
    const std::vector<float> one_core = train(n, testing::mesh_config("", ""));
    for (const char* layout : {"b:x", "h:x", "r:x;h:y"}) {
      SCOPED_TRACE(layout);
      const char* mesh = std::string(layout).find('y') != std::string::npos ? "x:2;y:2" : "x:2";
      EXPECT_EQ(train(n, testing::mesh_config(mesh, layout)), one_core);
      const std::vector<float> fast =
          train(n, testing::mesh_config(mesh, layout, MeshImpl::kSimd, false));
      for (size_t i = 0; i < fast.size(); ++i) EXPECT_NEAR(fast[i], one_core[i], 2e-6) << i;
    }
  }
}

TEST(GradientAccumulationTest, BuffersAreLaidOutLikeTheVariablesAndEmptyBetweenSteps) {
  Net net(4);
  SgdOptimizer sgd(0.1f);
  GradientAccumulation acc(sgd, net.loss, 2);
  Session s(net.g, testing::mesh_config("x:2", "h:x"));
  const HostTensor x = rows_of(Shape("b:8;r:4"), 1, 0, 4), y = rows_of(Shape("b:8;c:2"), 2, 0, 4);
  s.run({}, {{net.x, x}, {net.y, y}}, acc.accumulate_ops());
  const std::vector<float> held = s.variable_value("w1/accumulated_gradient").to_floats();
  EXPECT_GT(std::fabs(held[0]) + std::fabs(held[1]), 0.0f);
  s.run({}, {}, acc.apply_ops());
  for (float v : s.variable_value("w1/accumulated_gradient").to_floats()) EXPECT_EQ(v, 0.0f);
  EXPECT_NE(s.program_text({}, acc.accumulate_ops()).find("h:6@x"), std::string::npos);
}

// A token-mean loss: rows masked out as padding, the loss the mean over the
// rows kept, weighted by their count.
struct MaskedNet : Net {
  Tensor keep, kept;
  explicit MaskedNet(int64_t rows) : Net(rows) {
    keep = placeholder(mesh, per_row.shape(), float32, "keep");
    kept = reduce_sum(keep);
    loss = reduce_sum(per_row * keep) / maximum(kept, constant(mesh, 1.0f));
  }
};

// The weights after one step of 8 rows of which the last 5 are padding, in
// `microbatches` parts weighted by their kept rows (or not: `weighted`).
std::vector<float> train_masked(int64_t microbatches, bool weighted) {
  const int64_t rows = kBatch / microbatches;
  MaskedNet net(rows);
  SgdOptimizer sgd(0.1f);  // linear in the gradient: its scale shows
  GradientAccumulation acc(sgd, net.loss, microbatches, weighted ? net.kept : Tensor());
  Session s(net.g);
  const std::vector<float> keep = {1, 1, 1, 0, 0, 0, 0, 0};
  for (int64_t first = 0; first < kBatch; first += rows) {
    s.run(
        {},
        {{net.x, rows_of(Shape("b:8;r:4"), 10, first, rows)},
         {net.y, rows_of(Shape("b:8;c:2"), 20, first, rows)},
         {net.keep, HostTensor::from_floats(Shape({{"b", rows}}),
                                            {keep.begin() + first, keep.begin() + first + rows})}},
        acc.accumulate_ops());
  }
  if (!acc.apply_ops().empty()) s.run({}, {}, acc.apply_ops());
  std::vector<float> w = s.variable_value("w1").to_floats();
  for (float v : s.variable_value("w2").to_floats()) w.push_back(v);
  return w;
}

TEST(GradientAccumulationTest, WeightedPartsGiveTheWholeBatchsTokenMean) {
  const std::vector<float> whole = train_masked(1, true);
  for (int64_t n : {2, 4}) {
    SCOPED_TRACE(n);
    const std::vector<float> got = train_masked(n, true);
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(got[i], whole[i], 2e-6) << i;
  }
  // Unweighted, the parts' means count alike (3 of 4 parts all padding):
  // another update, which the comparison above would catch.
  const std::vector<float> plain = train_masked(4, false);
  double diff = 0;
  for (size_t i = 0; i < whole.size(); ++i) diff += std::fabs(plain[i] - whole[i]);
  EXPECT_GT(diff, 1e-3);
}

TEST(GradientAccumulationTest, ImpossibleCountsAreErrors) {
  Net net(4);
  SgdOptimizer sgd(0.1f);
  testing::expect_error<ValueError>([&] { GradientAccumulation(sgd, net.loss, 0); },
                                    "0 microbatches");
  testing::expect_error<ValueError>([&] { GradientAccumulation(sgd, net.loss, 2, net.x); },
                                    "weight must be a float32 scalar");
}

}  // namespace
}  // namespace mtf
