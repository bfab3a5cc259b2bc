// reduce_sum_of_squares: the sum of the squares of a product of broadcast
// factors against plain loops, kept and reduced dimensions split over the
// mesh (partial sums allreduced), a bfloat16 first factor, reproducible mode's
// one-processor bits on every layout, and the errors.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

const Dimension kA{"a", 8}, kB{"b", 12}, kC{"c", 6};

struct Case {
  const char* mesh;
  const char* layout;
  MeshImpl impl;
  bool reproducible;
};

TEST(SumOfSquaresTest, MatchesLoopsOnEveryLayout) {
  const Shape space({kA, kB, kC});
  const HostTensor xv = testing::random_tensor(space, 1);
  const HostTensor rv = testing::random_tensor(Shape({kB, kC}), 2, 0.5f, 2.f);
  const HostTensor cv = testing::random_tensor(Shape({kA}), 3, 0.5f, 2.f);
  const float* x = xv.data<float>();
  const float* r = rv.data<float>();
  const float* c = cv.data<float>();
  // References in double: over a (keeping b, c), over b and c (keeping a),
  // and over everything, of (x r c)^2; and of x^2 alone over b.
  std::vector<double> over_a(12 * 6), over_bc(8), x2_over_b(8 * 6);
  double all = 0;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 12; ++j)
      for (int k = 0; k < 6; ++k) {
        const double v = double(x[(i * 12 + j) * 6 + k]) * r[j * 6 + k] * c[i];
        over_a[j * 6 + k] += v * v;
        over_bc[i] += v * v;
        all += v * v;
        x2_over_b[i * 6 + k] += double(x[(i * 12 + j) * 6 + k]) * x[(i * 12 + j) * 6 + k];
      }
  std::vector<std::vector<HostTensor>> reproducible_runs;
  for (const Case& k : {Case{"", "", MeshImpl::kSimd, true}, Case{"", "", MeshImpl::kSimd, false},
                        Case{"x:2", "a:x", MeshImpl::kSimd, true},
                        Case{"x:2;y:2", "a:x;b:y", MeshImpl::kSimd, true},
                        Case{"x:2;y:2", "a:x;b:y", MeshImpl::kSimd, false},
                        Case{"x:2;y:3", "b:x;c:y", MeshImpl::kPlacement, true},
                        Case{"x:2;y:3", "b:x;c:y", MeshImpl::kPlacement, false}}) {
    SCOPED_TRACE(std::string(k.mesh) + " " + k.layout + (k.reproducible ? "" : " fast"));
    Graph g;
    Mesh mesh(g, "mesh");
    const Tensor xt = placeholder(mesh, space, float32, "x");
    const Tensor rt = placeholder(mesh, rv.shape(), float32, "r");
    const Tensor ct = placeholder(mesh, cv.shape(), float32, "c");
    const std::vector<Tensor> outs = {reduce_sum_of_squares({xt, rt, ct}, Shape({kB, kC})),
                                      reduce_sum_of_squares({xt, rt, ct}, Shape({kA})),
                                      reduce_sum_of_squares({xt, ct, rt}, Shape()),
                                      reduce_sum_of_squares({xt}, Shape({kA, kC})),
                                      reduce_sum_of_squares({cast(xt, bfloat16)}, Shape({kA, kC}))};
    Session s(g, mesh_config(k.mesh, k.layout, k.impl, k.reproducible));
    const std::vector<HostTensor> got = s.run(outs, {{xt, xv}, {rt, rv}, {ct, cv}});
    for (size_t i = 0; i < over_a.size(); ++i)
      EXPECT_NEAR(got[0].data<float>()[i], over_a[i], 1e-5 * over_a[i]) << i;
    for (size_t i = 0; i < over_bc.size(); ++i)
      EXPECT_NEAR(got[1].data<float>()[i], over_bc[i], 1e-5 * over_bc[i]) << i;
    EXPECT_NEAR(got[2].data<float>()[0], all, 1e-5 * all);
    for (size_t i = 0; i < x2_over_b.size(); ++i) {
      EXPECT_NEAR(got[3].data<float>()[i], x2_over_b[i], 1e-5 * x2_over_b[i]) << i;
      // bfloat16 values are within 2^-8 of the float32 ones: squares within 2^-7.
      EXPECT_NEAR(got[4].data<float>()[i], x2_over_b[i], x2_over_b[i] / 64) << i;
    }
    if (k.reproducible) reproducible_runs.push_back(got);
  }
  // Reproducible mode: every layout and implementation gives one processor's bits.
  for (size_t r = 1; r < reproducible_runs.size(); ++r)
    for (size_t i = 0; i < reproducible_runs[0].size(); ++i)
      EXPECT_EQ(0,
                std::memcmp(reproducible_runs[r][i].raw_data(), reproducible_runs[0][i].raw_data(),
                            reproducible_runs[0][i].num_bytes()))
          << "layout " << r << ", output " << i;
}

TEST(SumOfSquaresTest, BadArgumentsAreClearErrors) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, Shape({kA, kB}), float32, "x");
  const Tensor other = placeholder(mesh, Shape({kC}), float32, "other");
  auto fails_with = [](const std::function<void()>& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no error; wanted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  fails_with([&] { reduce_sum_of_squares({}, Shape()); }, "one to three factors, not 0");
  fails_with(
      [&] {
        reduce_sum_of_squares({x, other}, Shape());
      },
      "has a dimension c:6 that the first factor");
  fails_with([&] { reduce_sum_of_squares({x}, Shape({kC})); },
             "output dimension c:6 is not a dimension of the first factor");
  fails_with(
      [&] {
        reduce_sum_of_squares({x, cast(x, bfloat16)}, Shape());
      },
      "the first factor is float32 or bfloat16, the others float32");
  fails_with([&] { reduce_sum_of_squares({cast(x, int32)}, Shape()); },
             "the first factor is float32 or bfloat16");
}

}  // namespace
}  // namespace mtf
