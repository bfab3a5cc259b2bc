// T5's pieces of the transformer library (include/mtf/layers.h): RMS norm,
// the padding and same-segment masks, relative position buckets against a
// reference written from T5's definition, and the learned relative bias.
#include <cmath>

#include "expect_error.h"
#include "mtf/gradients.h"
#include "mtf/layers.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::expect_near_vectors;
using testing::random_tensor;

const Dimension kRows{"rows", 3}, kModel{"d_model", 8};

TEST(T5LayersTest, RmsNormMatchesHandComputationAndHasGradients) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kRows, kModel}), 4, -3.f, 3.f);
  Tensor y = layers::rms_norm(import_host(mesh, xv), kModel, "rms");
  Session s(g);
  s.set_variable_value("rms/scale", random_tensor(Shape({kModel}), 5, 0.5f, 1.5f));
  const auto x = xv.to_floats();
  const auto sc = s.variable_value("rms/scale").to_floats();
  std::vector<float> want;
  for (int64_t i = 0; i < kRows.size; ++i) {
    double ms = 0;
    for (int64_t k = 0; k < kModel.size; ++k) ms += std::pow(x[i * kModel.size + k], 2);
    ms /= kModel.size;
    for (int64_t k = 0; k < kModel.size; ++k)
      want.push_back(static_cast<float>(x[i * kModel.size + k] / std::sqrt(ms + 1e-6) * sc[k]));
  }
  expect_near_vectors(s.run(y).to_floats(), want);
  EXPECT_EQ(g.trainable_variables().size(), 1u);  // scale only: no bias
  testing::check_gradients({Shape({kRows, kModel})}, [](const std::vector<Tensor>& in) {
    return reduce_sum(square(layers::rms_norm(in[0], kModel, "r")) * in[0]);
  });
}

TEST(T5LayersTest, RmsNormInBFloat16StaysCloseToFloat32) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape({kRows, kModel}), 7, -3.f, 3.f);
  const Tensor x = import_host(mesh, xv);
  const Tensor y32 = layers::rms_norm(x, kModel, "a");
  const Tensor y16 = layers::rms_norm(cast(x, bfloat16), kModel, "b");
  EXPECT_EQ(y16.dtype(), bfloat16);
  Session s(g);
  const auto a = s.run(y32).to_floats(), b = s.run(cast(y16, float32)).to_floats();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], std::fabs(a[i]) / 64 + 1e-3);
}

TEST(T5LayersTest, PaddingAndSegmentMasks) {
  Graph g;
  Mesh mesh(g, "m");
  const Dimension batch{"batch", 2}, len{"length", 4}, mem{"memory_length", 4};
  const HostTensor ids = HostTensor::from_ints(Shape({batch, mem}), {5, 7, 0, 0, /**/ 3, 0, 9, 1});
  const auto pad = testing::eval(layers::attention_mask_ignore_padding(import_host(mesh, ids)));
  const std::vector<float> want_pad = {0, 0, -1e9f, -1e9f, 0, -1e9f, 0, 0};
  EXPECT_EQ(pad, want_pad);
  // Two packed rows: segments 1 1 2 0 and 1 2 2 2 (0: padding).
  const std::vector<int32_t> seg = {1, 1, 2, 0, 1, 2, 2, 2};
  const Tensor q = import_host(mesh, HostTensor::from_ints(Shape({batch, len}), seg));
  const Tensor m = import_host(mesh, HostTensor::from_ints(Shape({batch, mem}), seg));
  const Tensor mask = layers::attention_mask_same_segment(q, m);
  EXPECT_EQ(mask.shape(), Shape({batch, len, mem}));
  const auto got = testing::eval(mask);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(got[(b * 4 + i) * 4 + j], seg[b * 4 + i] == seg[b * 4 + j] ? 0.f : -1e9f)
            << b << " " << i << " " << j;
  EXPECT_THROW(layers::attention_mask_same_segment(cast(q, float32), m), DTypeError);
}

// T5's definition (mesh_tensorflow/transformer/attention.py), in float32.
int32_t reference_bucket(int32_t relative, bool bidirectional, int32_t buckets, int32_t distance) {
  int32_t ret = 0, n = -relative;
  if (bidirectional) {
    buckets /= 2;
    ret += n < 0 ? buckets : 0;
    n = std::abs(n);
  } else {
    n = std::max(n, 0);
  }
  const int32_t max_exact = buckets / 2;
  if (n < max_exact) return ret + n;
  const float log_range = static_cast<float>(std::log(static_cast<double>(distance) / max_exact));
  const float v = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) / log_range *
                  static_cast<float>(buckets - max_exact);
  return ret + std::min(max_exact + static_cast<int32_t>(v), buckets - 1);
}

TEST(T5LayersTest, RelativePositionBucketsMatchT5sDefinition) {
  Graph g;
  Mesh mesh(g, "m");
  const Dimension d{"d", 1201};
  std::vector<int32_t> rel;
  for (int32_t i = -600; i <= 600; ++i) rel.push_back(i);
  const Tensor r = import_host(mesh, HostTensor::from_ints(Shape({d}), rel));
  for (bool bidirectional : {true, false}) {
    for (auto [buckets, distance] : {std::pair{32, 128}, std::pair{8, 20}, std::pair{64, 512}}) {
      const Tensor b = layers::relative_position_bucket(r, bidirectional, buckets, distance);
      EXPECT_EQ(b.dtype(), int32);
      Session s(g);
      const HostTensor got = s.run(b);
      for (size_t i = 0; i < rel.size(); ++i) {
        ASSERT_EQ(got.data<int32_t>()[i],
                  reference_bucket(rel[i], bidirectional, buckets, distance))
            << "relative " << rel[i] << (bidirectional ? " bidirectional " : " causal ") << buckets
            << "/" << distance;
      }
    }
  }
  // T5's known values: bidirectional 32/128.
  EXPECT_EQ(reference_bucket(0, true, 32, 128), 0);
  EXPECT_EQ(reference_bucket(-1, true, 32, 128), 1);
  EXPECT_EQ(reference_bucket(1, true, 32, 128), 17);
  EXPECT_EQ(reference_bucket(-200, true, 32, 128), 15);
  EXPECT_THROW(layers::relative_position_bucket(r, true, 2, 128), ValueError);
  EXPECT_THROW(layers::relative_position_bucket(r, false, 8, 4), ValueError);
}

TEST(T5LayersTest, RelativePositionBiasReadsItsTableAndLearns) {
  Graph g;
  Mesh mesh(g, "m");
  const Dimension heads{"heads", 2}, len{"length", 5}, mem{"memory_length", 5};
  const Tensor bias = layers::relative_position_bias(range(mesh, len), range(mesh, mem), heads,
                                                     /*bidirectional=*/false, "rel", 8, 20);
  EXPECT_EQ(bias.shape(), Shape({len, mem, heads}));
  Session s(g);
  HostTensor table(Shape({heads, Dimension{"relative_buckets", 8}}), float32);
  for (int64_t i = 0; i < table.num_elements(); ++i) table.data<float>()[i] = 10.f * i;
  s.set_variable_value("rel/relative_attention_bias", table);
  const auto got = s.run(bias).to_floats();
  for (int q = 0; q < 5; ++q)
    for (int m = 0; m < 5; ++m)
      for (int h = 0; h < 2; ++h)
        EXPECT_EQ(got[(q * 5 + m) * 2 + h], 10.f * (h * 8 + reference_bucket(m - q, false, 8, 20)));
  // The table's gradient: each entry collects what reads its bucket.
  const HostTensor wv = random_tensor(Shape({len, mem, heads}), 9);
  const Tensor loss = reduce_sum(bias * import_host(mesh, wv));
  const std::vector<Tensor> vars = g.trainable_variables();
  ASSERT_EQ(vars.size(), 1u);
  const HostTensor grad = s.run(gradients({loss}, vars)[0]);
  std::vector<float> want(16, 0.f);
  const auto w = wv.to_floats();
  for (int q = 0; q < 5; ++q)
    for (int m = 0; m < 5; ++m)
      for (int h = 0; h < 2; ++h)
        want[h * 8 + reference_bucket(m - q, false, 8, 20)] += w[(q * 5 + m) * 2 + h];
  expect_near_vectors(grad.to_floats(), want);
  // On a mesh with heads split over it (5 positions do not split in two):
  // the same values.
  MeshConfig config;
  config.mesh_shape = MeshShape("rows:2");
  config.layout = LayoutRules("heads:rows");
  Session split(g, config);
  split.set_variable_value("rel/relative_attention_bias", table);
  EXPECT_EQ(split.run(bias).to_floats(), got);
}

}  // namespace
}  // namespace mtf
