// global_norm and gradient clipping: the norm on any mesh, layout and mesh
// implementation equals the one-core norm (bit for bit in reproducible mode)
// with one scalar allreduce; clipped updates equal the one-core updates; the
// optimizer reports the norm; bad clip norms are clear errors.
#include <cmath>

#include "expect_error.h"
#include "mtf/sim.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

const Shape kA("r:4;c:6"), kB("c:6;h:8"), kC("h:8");

double norm_by_hand() {
  double s = 0;
  int seed = 1;
  for (const Shape& shape : {kA, kB, kC})
    for (float v : testing::random_tensor(shape, seed++).to_floats()) s += double(v) * v;
  return std::sqrt(s);
}

// The norm of three tensors of different shapes on one mesh and layout, and
// the number of allreduces its program makes.
float norm_on(const MeshConfig& mc, int* allreduces = nullptr) {
  Graph g;
  Mesh mesh(g, "m");
  std::vector<Tensor> xs;
  int seed = 1;
  for (const Shape& shape : {kA, kB, kC})
    xs.push_back(import_host(mesh, testing::random_tensor(shape, seed++)));
  const Tensor n = global_norm(xs);
  Session s(g, mc);
  if (allreduces) {
    const std::string text = s.program_text({n});
    *allreduces = 0;
    for (size_t at = text.find("allreduce"); at != std::string::npos;
         at = text.find("allreduce", at + 1))
      ++*allreduces;
  }
  return s.run({n})[0].to_floats()[0];
}

TEST(GlobalNormTest, EveryLayoutGivesTheOneCoreNorm) {
  const double want = norm_by_hand();
  const float one_core = norm_on(mesh_config("", ""));
  EXPECT_NEAR(one_core, want, 1e-5 * want);
  const char* layouts[] = {"r:x;c:y", "c:x;h:y", "h:x", "r:y;h:x", "c:x", ""};
  for (const char* layout : layouts) {
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      SCOPED_TRACE(std::string(layout) + " on " + mesh_impl_name(impl));
      int allreduces = -1;
      const float fast = norm_on(mesh_config("x:2;y:2", layout, impl, false), &allreduces);
      EXPECT_NEAR(fast, want, 1e-5 * want);
      // One allreduce of the partial sums, none when nothing is split.
      EXPECT_EQ(allreduces, std::string(layout).empty() ? 0 : 1);
      // Reproducible mode: the one-core bits on every layout.
      EXPECT_EQ(norm_on(mesh_config("x:2;y:2", layout, impl, true)), one_core);
    }
  }
  // The simulator runs the same per-core program (on a TPU v2-8's 8 cores).
  for (const char* layout : {"r:x;c:y", "h:x;c:y", "r:y;h:x", ""}) {
    SCOPED_TRACE(std::string(layout) + " simulated");
    MeshConfig mc = mesh_config("x:4;y:2", layout, MeshImpl::kSimulated, false);
    mc.sim->topology = Topology::preset("tpu-v2-8");
    EXPECT_NEAR(norm_on(mc), want, 1e-5 * want);
  }
}

TEST(GlobalNormTest, ReadsBFloat16AndSkipsMissingGradients) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor a = import_host(mesh, HostTensor::from_floats(Shape("r:2"), {3, 4}));
  const Tensor n = global_norm({Tensor(), cast(a, bfloat16), Tensor()});
  EXPECT_EQ(n.dtype(), float32);
  Session s(g, mesh_config("x:2", "r:x"));
  EXPECT_FLOAT_EQ(s.run({n})[0].to_floats()[0], 5.0f);
  testing::expect_error<ValueError>([&] { global_norm({Tensor()}); }, "no valid tensors");
  const Tensor ids = import_host(mesh, HostTensor::from_ints(Shape("r:2"), {1, 2}));
  testing::expect_error<DTypeError>([&] { global_norm({a, ids}); }, "global_norm");
}

// SGD with clipping on a toy model: w1 [r, c] and w2 [c, h], loss
// sum((x w1 w2 - 3)^2); returns the weights after `steps` updates.
std::vector<std::vector<float>> clipped_sgd(const MeshConfig& mc, float clip, int steps,
                                            std::vector<float>* norms) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor w1 = get_variable(mesh, "w1", kA, Initializer::normal(0, 0.5f));
  const Tensor w2 = get_variable(mesh, "w2", kB, Initializer::normal(0, 0.5f));
  const Tensor x = import_host(mesh, testing::random_tensor(Shape("b:2;r:4"), 7));
  const Tensor y = einsum({einsum({x, w1}, Shape("b:2;c:6")), w2}, Shape("b:2;h:8"));
  const Tensor loss = reduce_sum(square(y - 3.0f));
  SgdOptimizer opt(0.01f);
  opt.set_clip_norm(clip);
  const auto updates = opt.minimize(loss);
  const Tensor norm = opt.gradient_norm();
  Session s(g, mc);
  for (int i = 0; i < steps; ++i) norms->push_back(s.run({norm}, {}, updates)[0].to_floats()[0]);
  return {s.variable_value("w1").to_floats(), s.variable_value("w2").to_floats()};
}

TEST(ClippingTest, ClippedUpdatesOnAMeshEqualTheOneCoreUpdates) {
  std::vector<float> norms;
  const auto want = clipped_sgd(mesh_config("", ""), 1.0f, 3, &norms);
  // The gradients are larger than the clip norm: clipping is in play.
  EXPECT_GT(norms[0], 2.0f);
  std::vector<float> unclipped_norms;
  const auto unclipped = clipped_sgd(mesh_config("", ""), 0.0f, 3, &unclipped_norms);
  EXPECT_EQ(unclipped_norms[0], norms[0]);  // reported before clipping
  EXPECT_GT(std::fabs(unclipped[0][0] - want[0][0]), 1e-3);
  // Each clipped step moves the weights by lr * clip_norm at most.
  for (const char* layout : {"r:x;c:y", "h:x;c:y", "b:x"}) {
    SCOPED_TRACE(layout);
    for (bool reproducible : {false, true}) {
      std::vector<float> got_norms;
      const auto got = clipped_sgd(mesh_config("x:2;y:2", layout, MeshImpl::kSimd, reproducible),
                                   1.0f, 3, &got_norms);
      for (size_t v = 0; v < want.size(); ++v)
        for (size_t i = 0; i < want[v].size(); ++i) {
          if (reproducible) {
            EXPECT_EQ(got[v][i], want[v][i]) << "variable " << v << " element " << i;
          } else {
            EXPECT_NEAR(got[v][i], want[v][i], 1e-5) << "variable " << v << " element " << i;
          }
        }
      for (size_t k = 0; k < norms.size(); ++k)
        EXPECT_NEAR(got_norms[k], norms[k], 1e-4 * norms[k]);
    }
  }
}

TEST(ClippingTest, ClipByGlobalNormScalesOnlyAboveTheNorm) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor a = import_host(mesh, HostTensor::from_floats(Shape("r:2"), {3, 4}));
  Tensor norm;
  const auto big = clip_by_global_norm({a, Tensor()}, 1.0f, &norm);
  ASSERT_EQ(big.size(), 2u);
  EXPECT_FALSE(big[1].valid());
  const auto small = clip_by_global_norm({a}, 10.0f);
  Session s(g);
  const auto out = s.run({big[0], norm, small[0]});
  EXPECT_NEAR(out[0].to_floats()[0], 0.6f, 1e-6);
  EXPECT_NEAR(out[0].to_floats()[1], 0.8f, 1e-6);
  EXPECT_FLOAT_EQ(out[1].to_floats()[0], 5.0f);
  EXPECT_EQ(out[2].to_floats(), (std::vector<float>{3, 4}));
}

TEST(ClippingTest, BadClipNormsAreClearErrors) {
  SgdOptimizer opt(0.1f);
  testing::expect_error<ValueError>([&] { opt.set_clip_norm(-1); }, "finite norm > 0");
  testing::expect_error<ValueError>([&] { opt.set_clip_norm(NAN); }, "finite norm > 0");
  testing::expect_error<ValueError>([&] { opt.set_clip_norm(INFINITY); }, "finite norm > 0");
  testing::expect_error<ValueError>([&] { opt.gradient_norm(); }, "after minimize");
  Graph g;
  Mesh mesh(g, "m");
  const Tensor a = import_host(mesh, HostTensor::from_floats(Shape("r:2"), {3, 4}));
  testing::expect_error<ValueError>([&] { clip_by_global_norm({a}, 0.0f); }, "finite number > 0");
}

}  // namespace
}  // namespace mtf
