// Mesh TensorFlow's top_1, sample_with_temperature, reduce_first,
// softmax / log_softmax / reduce_logsumexp with an extra logit,
// replace_dimensions and gather to an output shape: values against plain
// loops, the one-processor bits when the reduced dimension is split, and
// the errors bad input gets.
#include <cmath>

#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

const Dimension kB{"b", 4}, kV{"v", 8};

HostTensor logits_with_ties() {
  HostTensor x = testing::random_tensor(Shape({kB, kV}), 5, -2.f, 2.f);
  x.data<float>()[1] = x.data<float>()[5] = 9.f;  // row 0: the max at 1 and 5
  return x;
}

TEST(SelectionOpsTest, Top1GivesTheLastIndexOfTheMaxOnEveryLayout) {
  const HostTensor xv = logits_with_ties();
  std::vector<int32_t> one_index;
  std::vector<float> one_value;
  for (const char* layout : {"", "v:x", "b:x;v:y"}) {
    SCOPED_TRACE(layout);
    Graph g;
    Mesh mesh(g, "mesh");
    const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    const auto [index, value] = top_1(x, "v");
    EXPECT_EQ(index.shape(), Shape({kB}));
    Session s(g, mesh_config(*layout ? "x:2;y:2" : "", layout));
    const auto out = s.run({index, value}, {{x, xv}});
    const auto idx = out[0].to_ints();
    const auto val = out[1].to_floats();
    for (int64_t r = 0; r < 4; ++r) {
      int last = 0;
      for (int c = 0; c < 8; ++c)
        if (xv.data<float>()[r * 8 + c] >= xv.data<float>()[r * 8 + last]) last = c;
      EXPECT_EQ(idx[r], last) << "row " << r;
      EXPECT_EQ(val[r], xv.data<float>()[r * 8 + last]);
    }
    if (one_index.empty()) {
      one_index = idx;
      one_value = val;
    }
    EXPECT_EQ(idx, one_index);
  }
}

TEST(SelectionOpsTest, SamplesFollowTheSoftmaxAndTemperatureZeroIsTheMax) {
  // 4000 draws over 4 classes with logits log(1, 2, 3, 4): frequencies near
  // 0.1, 0.2, 0.3, 0.4; temperature 2 flattens them to sqrt's proportions.
  const Dimension n{"n", 4000}, c{"c", 4};
  Graph g;
  Mesh mesh(g, "mesh");
  std::vector<float> lv;
  for (int i = 0; i < 4000; ++i)
    for (float p : {1.f, 2.f, 3.f, 4.f}) lv.push_back(std::log(p));
  const Tensor logits = import_host(mesh, HostTensor::from_floats(Shape({n, c}), lv));
  const Tensor t1 = sample_with_temperature(logits, "c", 1.0f, 7);
  const Tensor t2 = sample_with_temperature(logits, "c", 2.0f, 8);
  const Tensor t0 = sample_with_temperature(logits, "c", 0.0f);
  Session s(g);
  const auto out = s.run({t1, t2, t0});
  for (int k = 0; k < 2; ++k) {
    std::vector<double> freq(4, 0);
    for (int32_t v : out[k].to_ints()) freq[v] += 1.0 / 4000;
    double z = 0;
    for (int i = 1; i <= 4; ++i) z += std::pow(i, k == 0 ? 1.0 : 0.5);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(freq[i], std::pow(i + 1, k == 0 ? 1.0 : 0.5) / z, 0.03)
          << "temperature " << (k + 1) << " class " << i;
  }
  for (int32_t v : out[2].to_ints()) ASSERT_EQ(v, 3);
  // Split over the classes and the draws: the same draws.
  Session split(g, mesh_config("x:2;y:2", "n:x;c:y"));
  EXPECT_EQ(split.run(t1).to_ints(), out[0].to_ints());
  EXPECT_THROW(sample_with_temperature(logits, "c", -1.f), ValueError);
}

TEST(SelectionOpsTest, ExtraLogitCountsOneMoreColumn) {
  const HostTensor xv = testing::random_tensor(Shape({kB, kV}), 6, -3.f, 3.f);
  for (const char* layout : {"", "v:x"}) {
    SCOPED_TRACE(layout);
    Graph g;
    Mesh mesh(g, "mesh");
    const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    const Tensor extra = constant(mesh, 0.5f);
    const Tensor y = softmax(x, "v", extra);
    const Tensor ly = log_softmax(x, "v", extra);
    const Tensor lse = reduce_logsumexp(x, "v", extra);
    const Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
    Session s(g, mesh_config(*layout ? "x:2" : "", layout));
    const auto out = s.run({y, ly, lse, dx}, {{x, xv}});
    for (int64_t r = 0; r < 4; ++r) {
      double z = std::exp(0.5);
      for (int c = 0; c < 8; ++c) z += std::exp(xv.data<float>()[r * 8 + c]);
      EXPECT_NEAR(out[2].to_floats()[r], std::log(z), 1e-5);
      double sum = 0, dot = 0;
      for (int c = 0; c < 8; ++c) {
        const double p = std::exp(xv.data<float>()[r * 8 + c]) / z;
        EXPECT_NEAR(out[0].to_floats()[r * 8 + c], p, 1e-6);
        EXPECT_NEAR(out[1].to_floats()[r * 8 + c], std::log(p), 1e-5);
        sum += p;
        dot += p * p;
      }
      EXPECT_LT(sum, 1.0);  // the extra column holds the rest
      // d/dx_c sum_k p_k^2 = 2 p_c (p_c - sum_k p_k^2): softmax's Jacobian.
      for (int c = 0; c < 8; ++c) {
        const double p = std::exp(xv.data<float>()[r * 8 + c]) / z;
        EXPECT_NEAR(out[3].to_floats()[r * 8 + c], 2 * p * (p - dot), 1e-5);
      }
    }
  }
}

TEST(SelectionOpsTest, ReduceFirstReplaceDimensionsAndGatherOrder) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Dimension a{"a", 2}, b{"b", 3}, c{"c", 4}, d{"d", 6}, e{"e", 2};
  const HostTensor xv = testing::random_tensor(Shape({a, b, c}), 7);
  const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
  const Tensor first = reduce_first(x, Shape({c, a}));
  const Tensor replaced = replace_dimensions(x, {b, c}, {d, e});
  EXPECT_EQ(replaced.shape(), Shape({a, d, e}));
  EXPECT_EQ(replace_dimensions(Shape({a, b, c}), {a}, {Dimension{"z", 2}}),
            Shape({Dimension{"z", 2}, b, c}));
  EXPECT_THROW(replace_dimensions(Shape({a, b, c}), {c, b}, {d}), ShapeError);
  const Tensor idx = import_host(mesh, HostTensor::from_ints(Shape({e}), {2, 0}));
  const Tensor gathered = gather(x, idx, "b", Shape({c, e, a}));
  EXPECT_EQ(gathered.shape(), Shape({c, e, a}));
  EXPECT_THROW(gather(x, idx, "b", Shape({c, a})), ShapeError);
  EXPECT_THROW(reduce_first(x, Shape({d})), ShapeError);
  Session s(g, mesh_config("x:2;y:2", "c:x;a:y"));
  const auto out = s.run({first, replaced, gathered}, {{x, xv}});
  const float* p = xv.data<float>();
  for (int ci = 0; ci < 4; ++ci)
    for (int ai = 0; ai < 2; ++ai) {
      EXPECT_EQ(out[0].to_floats()[ci * 2 + ai], p[ai * 12 + 0 * 4 + ci]);
      for (int ei = 0; ei < 2; ++ei)
        EXPECT_EQ(out[2].to_floats()[(ci * 2 + ei) * 2 + ai], p[ai * 12 + (ei ? 0 : 2) * 4 + ci]);
    }
  EXPECT_EQ(out[1].to_floats(), xv.to_floats());  // a reshape keeps row-major order
}

TEST(SelectionOpsTest, DynamicShiftMovesEachRowByItsOffset) {
  const Dimension b{"b", 4}, n{"n", 6};
  const HostTensor xv = testing::random_tensor(Shape({b, n}), 9);
  const std::vector<int32_t> offsets = {0, 1, -2, 7};
  for (bool wrap : {false, true}) {
    for (const char* layout : {"", "n:x", "b:x"}) {
      SCOPED_TRACE(std::string(layout) + (wrap ? " wrap" : ""));
      Graph g;
      Mesh mesh(g, "mesh");
      const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
      const Tensor off = import_host(mesh, HostTensor::from_ints(Shape({b}), offsets));
      const Tensor y = dynamic_shift(x, off, "n", wrap);
      const Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
      Session s(g, mesh_config(*layout ? "x:2" : "", layout));
      const auto out = s.run({y, dx}, {{x, xv}});
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 6; ++j) {
          int from = j - offsets[r];
          if (wrap) from = ((from % 6) + 6) % 6;
          const float want = from >= 0 && from < 6 ? xv.data<float>()[r * 6 + from] : 0.f;
          EXPECT_EQ(out[0].to_floats()[r * 6 + j], want) << "row " << r << " position " << j;
          // d/dx sum(y^2): 2 x where x lands inside, 0 where it falls off.
          const int to = j + offsets[r];
          const bool kept = wrap || (to >= 0 && to < 6);
          EXPECT_FLOAT_EQ(out[1].to_floats()[r * 6 + j],
                          kept ? 2 * xv.data<float>()[r * 6 + j] : 0.f);
        }
    }
  }
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
  EXPECT_THROW(dynamic_shift(x, constant(mesh, 1.f), "n", false), DTypeError);
  EXPECT_THROW(dynamic_shift(x, range(mesh, n, int32), "n", false), ShapeError);
}

TEST(SelectionOpsTest, LogicalOpsAndAllAnyOnEveryLayout) {
  const Dimension r{"r", 4}, c{"c", 4};
  // Rows: all true, one false, all false, true with NaN and negatives.
  const std::vector<float> av = {1, 2, 3, 4, 1, 0, 1, 1, 0, 0, 0, 0, NAN, -1, 0.5f, -0.0f};
  const std::vector<int32_t> bv = {1, 0, 1, 0, 7, 7, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0};
  for (const char* layout : {"", "c:x", "r:x;c:y"}) {
    SCOPED_TRACE(layout);
    Graph g;
    Mesh mesh(g, "mesh");
    const Tensor a = import_host(mesh, HostTensor::from_floats(Shape({r, c}), av));
    const Tensor b = import_host(mesh, HostTensor::from_ints(Shape({r, c}), bv));
    const std::vector<Tensor> outs = {logical_not(a),     logical_and(a, b),
                                      logical_or(a, b),   reduce_all(a, "c"),
                                      reduce_any(a, "c"), reduce_any(b, Shape())};
    Session s(g, mesh_config(*layout ? "x:2;y:2" : "", layout));
    const auto got = s.run(outs);
    for (const HostTensor& t : got) EXPECT_EQ(t.dtype(), bool_);
    for (int i = 0; i < 16; ++i) {
      const bool x = av[i] != 0 || av[i] != av[i], y = bv[i] != 0;
      EXPECT_EQ(got[0].to_ints()[i], !x) << i;
      EXPECT_EQ(got[1].to_ints()[i], x && y) << i;
      EXPECT_EQ(got[2].to_ints()[i], x || y) << i;
    }
    EXPECT_EQ(got[3].to_ints(), (std::vector<int32_t>{1, 0, 0, 0}));
    EXPECT_EQ(got[4].to_ints(), (std::vector<int32_t>{1, 1, 0, 1}));
    EXPECT_EQ(got[5].to_ints(), (std::vector<int32_t>{1}));
  }
}

}  // namespace
}  // namespace mtf
