// recompute_grad: the same gradients as keeping the activations (bit for
// bit, dropout included: the recomputation draws the same numbers), on one
// processor and under a layout, less peak memory in the simulator's
// estimate, and clear errors for functions it cannot replay.
#include "mtf/layers.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::random_tensor;

// Four residual blocks, each dense-relu-dense with dropout and layer norm;
// with `recompute` each block runs under recompute_grad.
struct Net {
  Graph g;
  Mesh mesh{g, "m"};
  Tensor x, loss;
  std::vector<Tensor> grads;  // d loss / d x, then d loss / d every variable
  explicit Net(bool recompute, int64_t batch = 8, int64_t hidden = 64) {
    x = placeholder(mesh, Shape({{"b", batch}, {"d", 16}}), float32, "x");
    Tensor h = x;
    for (int i = 0; i < 4; ++i) {
      const std::string name = "block" + std::to_string(i);
      auto block = [name, hidden](const std::vector<Tensor>& in) {
        Tensor y = layers::dense_relu_dense(in[0], Dimension{"h", hidden}, name, 0.8f);
        return std::vector<Tensor>{layers::layer_norm(in[0] + y, "d", name + "/ln")};
      };
      h = recompute ? recompute_grad(block, {h})[0] : block({h})[0];
    }
    loss = reduce_sum(h * h);
    std::vector<Tensor> xs{x};
    for (const Tensor& v : g.trainable_variables()) xs.push_back(v);
    grads = gradients({loss}, xs);
  }
};

TEST(RecomputeGradTest, GradientsEqualKeepingTheActivations) {
  const HostTensor xv = random_tensor(Shape("b:8;d:16"), 3);
  for (const char* layout : {"", "b:r;h:c"}) {
    SCOPED_TRACE(std::string("layout \"") + layout + "\"");
    auto run = [&](bool recompute) {
      Net net(recompute);
      MeshConfig mc;
      if (*layout) mc.mesh_shape = MeshShape("r:2;c:2");
      mc.layout = LayoutRules(layout);
      mc.reproducible = true;
      Session s(net.g, mc);
      std::vector<Tensor> fetches{net.loss};
      fetches.insert(fetches.end(), net.grads.begin(), net.grads.end());
      return s.run(fetches, {{net.x, xv}});
    };
    const std::vector<HostTensor> kept = run(false), again = run(true);
    ASSERT_EQ(kept.size(), again.size());
    for (size_t i = 0; i < kept.size(); ++i)
      EXPECT_EQ(again[i].to_floats(), kept[i].to_floats()) << "fetch " << i;
  }
}

TEST(RecomputeGradTest, PeakMemoryFallsInTheSimulatorsEstimate) {
  auto peak = [](bool recompute) {
    Net net(recompute, 512, 4096);
    MeshConfig mc;
    mc.impl = MeshImpl::kSimulated;
    mc.sim->topology = Topology::preset("tpu-v2-8");
    mc.sim->mode = SimMode::kCostOnly;
    mc.mesh_shape = MeshShape("r:8");
    mc.layout = LayoutRules("b:r");
    Session s(net.g, mc);
    std::vector<Tensor> fetches{net.loss};
    fetches.insert(fetches.end(), net.grads.begin(), net.grads.end());
    s.run(fetches, {});
    return s.simulation_report().peak_memory;
  };
  const int64_t kept = peak(false), again = peak(true);
  // Each block keeps [64, 4096] floats of activations (relu, dropout mask
  // and output: about 1 MiB apiece per core) without recomputation.
  EXPECT_LT(again, kept - 2 * (int64_t{1} << 20)) << kept << " vs " << again;
}

TEST(RecomputeGradTest, FunctionsItCannotReplayAreErrors) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:2;d:3"), float32, "x");
  using V = std::vector<Tensor>;
  EXPECT_THROW(recompute_grad([](const V& in) { return V{in[0]}; }, {x}), ValueError);
  EXPECT_THROW(recompute_grad([](const V&) { return V{}; }, {x}), ValueError);
  EXPECT_THROW(recompute_grad([](const V& in) { return V{in[0] * 2.f}; }, {}), ValueError);
  // A function that builds something else the second time.
  int calls = 0;
  V y = recompute_grad(
      [&calls](const V& in) { return V{++calls == 1 ? in[0] * 2.f : reduce_sum(in[0], "d")}; },
      {x});
  EXPECT_THROW(gradients({reduce_sum(y[0])}, {x}), ValueError);
}

}  // namespace
}  // namespace mtf
