// layers::moe: outputs against a loop that routes each token by hand (top-2
// gating, capacity per group, first choices first), the load-balancing
// loss's value for a uniform router, gradients against finite differences,
// and the one-processor bits under layouts that split experts, groups and
// the hidden dimension, on both mesh implementations.
#include <algorithm>
#include <cmath>

#include "mtf/layers.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::random_tensor;

// y for x [G, S, M] and the layer's variables, routed one token at a time.
std::vector<float> reference(const std::vector<float>& x, int64_t G, int64_t S, int64_t M,
                             const std::vector<float>& gate, const std::vector<float>& wi,
                             const std::vector<float>& wo, int64_t E, int64_t H, int64_t C) {
  std::vector<float> y(G * S * M, 0.f);
  auto expert = [&](int64_t e, const float* v, float w, float* out) {
    for (int64_t h = 0; h < H; ++h) {
      double a = 0;
      for (int64_t m = 0; m < M; ++m) a += double(v[m]) * wi[(e * M + m) * H + h];
      a = std::max(a, 0.0);
      for (int64_t m = 0; m < M; ++m) out[m] += float(w * a * wo[(e * H + h) * M + m]);
    }
  };
  for (int64_t g = 0; g < G; ++g) {
    std::vector<int64_t> i1(S), i2(S);
    std::vector<double> g1(S), g2(S);
    for (int64_t s = 0; s < S; ++s) {
      const float* v = &x[(g * S + s) * M];
      std::vector<double> logit(E), p(E);
      double mx = -1e30, sum = 0;
      for (int64_t e = 0; e < E; ++e) {
        for (int64_t m = 0; m < M; ++m) logit[e] += double(v[m]) * gate[m * E + e];
        mx = std::max(mx, logit[e]);
      }
      for (int64_t e = 0; e < E; ++e) sum += p[e] = std::exp(logit[e] - mx);
      for (double& q : p) q /= sum;
      i1[s] = std::max_element(p.begin(), p.end()) - p.begin();
      std::vector<double> rest = p;
      rest[i1[s]] = 0;
      i2[s] = std::max_element(rest.begin(), rest.end()) - rest.begin();
      const double d = p[i1[s]] + p[i2[s]] + 1e-9;
      g1[s] = p[i1[s]] / d;
      g2[s] = p[i2[s]] / d;
    }
    std::vector<int64_t> count(E, 0), seconds(E, 0);
    std::vector<bool> keep1(S);
    for (int64_t s = 0; s < S; ++s) keep1[s] = count[i1[s]]++ < C;
    for (int64_t e = 0; e < E; ++e) count[e] = std::min(count[e], C);
    for (int64_t s = 0; s < S; ++s) {
      float* out = &y[(g * S + s) * M];
      const float* v = &x[(g * S + s) * M];
      if (keep1[s]) expert(i1[s], v, g1[s], out);
      if (count[i2[s]] + seconds[i2[s]]++ < C) expert(i2[s], v, g2[s], out);
    }
  }
  return y;
}

TEST(MoeTest, RoutesLikeALoopOverTokens) {
  for (float capacity_factor : {4.0f, 1.0f, 0.5f}) {  // nothing dropped; some; many
    SCOPED_TRACE("capacity factor " + std::to_string(capacity_factor));
    Graph g;
    Mesh mesh(g, "m");
    const HostTensor xv = random_tensor(Shape("g:3;s:8;d:5"), 7, -2.f, 2.f);
    Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    layers::MoeOptions o;
    o.experts = {"experts", 4};
    o.hidden = {"expert_hidden", 6};
    o.capacity_factor = capacity_factor;
    const layers::MoeOutput out = layers::moe(x, "s", "moe", o);
    Session sess(g);
    const std::vector<float> got = sess.run(out.y, {{x, xv}}).to_floats();
    const int64_t C =
        std::max<int64_t>(1, std::min<int64_t>(8, int64_t(std::ceil(8 * capacity_factor / 4))));
    testing::expect_near_vectors(
        got,
        reference(xv.to_floats(), 3, 8, 5, sess.variable_value("moe/gate").to_floats(),
                  sess.variable_value("moe/wi").to_floats(),
                  sess.variable_value("moe/wo").to_floats(), 4, 6, C),
        1e-5f);
  }
}

// bfloat16 x: routing in float32 (the gate stays float32), the experts on
// bfloat16 copies of float32 weights; the output is the reference routed
// from the rounded input, within bfloat16's rounding of each product.
TEST(MoeTest, BFloat16InputsRouteInFloat32) {
  Graph g;
  Mesh mesh(g, "m");
  const HostTensor xv = random_tensor(Shape("g:3;s:8;d:5"), 7, -2.f, 2.f).as_dtype(bfloat16);
  Tensor x = placeholder(mesh, xv.shape(), bfloat16, "x");
  layers::MoeOptions o;
  o.experts = {"experts", 4};
  o.hidden = {"expert_hidden", 6};
  const layers::MoeOutput out = layers::moe(x, "s", "moe", o);
  EXPECT_EQ(out.y.dtype(), bfloat16);
  EXPECT_EQ(out.loss.dtype(), float32);
  Session sess(g);
  const std::vector<float> got = sess.run(out.y, {{x, xv}}).to_floats();
  EXPECT_EQ(sess.variable_value("moe/gate").dtype(), float32);
  EXPECT_EQ(sess.variable_value("moe/wi").dtype(), float32);  // the master; read as bfloat16
  auto rounded = [](const HostTensor& t) { return t.as_dtype(bfloat16).to_floats(); };
  const std::vector<float> want =
      reference(xv.to_floats(), 3, 8, 5, sess.variable_value("moe/gate").to_floats(),
                rounded(sess.variable_value("moe/wi")), rounded(sess.variable_value("moe/wo")), 4,
                6, /*C=ceil(8 * 2.0 / 4)*/ 4);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 0.03f * (1 + std::fabs(want[i]))) << i;
}

TEST(MoeTest, AUniformRouterScoresTheLossCoefficient) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = import_host(mesh, random_tensor(Shape("g:2;s:6;d:3"), 1));
  layers::MoeOptions o;
  o.loss_coef = 0.25f;
  const layers::MoeOutput out = layers::moe(x, "s", "moe", o);
  Session sess(g);
  sess.set_variable_value("moe/gate", HostTensor::zeros(Shape("d:3;experts_unsplit:4"), float32));
  EXPECT_FLOAT_EQ(sess.run(out.loss).to_floats()[0], 0.25f);
}

TEST(MoeTest, GradientsMatchFiniteDifferences) {
  // Inputs away from routing ties: the gates move smoothly with x, the
  // choices stay put under the finite-difference step.
  testing::check_gradients(
      {Shape("g:2;s:4;d:3")},
      [](const std::vector<Tensor>& in) {
        layers::MoeOptions o;
        o.experts = {"experts", 3};
        o.hidden = {"expert_hidden", 4};
        const layers::MoeOutput out = layers::moe(in[0], "s", "moe", o);
        return out.y * out.y + out.loss;
      },
      testing::uniform(-1.f, 1.f), 1e-3f, 3e-2f);
}

TEST(MoeTest, EveryLayoutGivesTheOneProcessorBits) {
  const HostTensor xv = random_tensor(Shape("g:4;s:8;d:6"), 3);
  auto run = [&](const char* mesh_shape, const char* layout, MeshImpl impl) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    layers::MoeOptions o;
    o.hidden = {"expert_hidden", 8};
    o.capacity_factor = 1.0f;
    const layers::MoeOutput out = layers::moe(x, "s", "moe", o);
    Tensor loss = reduce_sum(out.y * out.y) + out.loss;
    std::vector<Tensor> fetches{out.y, out.loss};
    std::vector<Tensor> xs{x};
    for (const Tensor& v : g.trainable_variables()) xs.push_back(v);
    for (const Tensor& d : gradients({loss}, xs)) fetches.push_back(d);
    const MeshConfig mc = testing::mesh_config(mesh_shape, layout, impl);
    Session s(g, mc);
    return s.run(fetches, {{x, xv}});
  };
  const std::vector<HostTensor> one = run("", "", MeshImpl::kSimd);
  for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    for (const auto& [m, l] :
         std::vector<std::pair<const char*, const char*>>{{"r:4", "experts:r"},
                                                          {"r:4", "g:r;experts:r"},  // alltoalls
                                                          {"r:2;c:2", "g:r;experts:c"},
                                                          {"r:2;c:2", "g:r;experts:c;g_unsplit:r"},
                                                          {"r:2;c:2", "g:r;expert_hidden:c"},
                                                          {"r:2;c:2", "s:r;d:c"}}) {
      SCOPED_TRACE(std::string(m) + " " + l + (impl == MeshImpl::kSimd ? " simd" : " placement"));
      const std::vector<HostTensor> got = run(m, l, impl);
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_EQ(got[i].to_floats(), one[i].to_floats()) << "fetch " << i;
    }
  }
}

// With the groups and the experts split over one mesh axis, dispatch and
// combine (and their gradients) move tokens by alltoall, nothing else.
TEST(MoeTest, GroupsAndExpertsOnOneAxisExchangeByAlltoall) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("g:4;s:8;d:6"), float32, "x");
  layers::MoeOptions o;
  o.hidden = {"expert_hidden", 8};
  const layers::MoeOutput out = layers::moe(x, "s", "moe", o);
  std::vector<Tensor> fetches{out.y};
  for (const Tensor& d : gradients({reduce_sum(out.y * out.y)}, {x})) fetches.push_back(d);
  MeshConfig mc;
  mc.mesh_shape = MeshShape("r:4");
  mc.layout = LayoutRules("g:r;experts:r");
  Session s(g, mc);
  const std::string counters = s.counters_text(fetches);
  // [experts 4, g 4, capacity 4, d 6] floats, a quarter of g per processor;
  // 3 of its 4 blocks leave.
  EXPECT_NE(counters.find("alltoall/r 288 bytes"), std::string::npos) << counters;
  EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
}

TEST(MoeTest, BadArgumentsAreErrors) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = zeros(mesh, Shape("g:2;s:4;d:3"));
  layers::MoeOptions one_expert;
  one_expert.experts = {"experts", 1};
  EXPECT_THROW(layers::moe(x, "s", "a", one_expert), ValueError);
  EXPECT_THROW(layers::moe(x, "t", "b"), ShapeError);
  EXPECT_THROW(layers::moe(x, "d", "c"), ShapeError);
  EXPECT_THROW(layers::moe(zeros(mesh, Shape("s:4"), float32), "s", "d"), ShapeError);
  EXPECT_THROW(layers::moe(zeros(mesh, Shape("s:4;d:3"), int32), "s", "e"), DTypeError);
}

}  // namespace
}  // namespace mtf
