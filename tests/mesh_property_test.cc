// Property test: random graphs built from the op set, with gradients and an
// SGD step, run under many meshes and random valid layout rules with both
// mesh implementations; every fetched tensor and every updated variable must
// match the one-processor run (1e-5 relative), random draws bit for bit; in
// reproducible mode everything bit for bit.
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "test_util.h"

namespace mtf {
namespace {

using testing::expect_close;

const Dimension kI{"i", 8}, kJ{"j", 6}, kK{"k", 4}, kL{"l", 12};

struct RandomGraph {
  Graph g;
  Mesh mesh{g, "mesh"};
  Tensor x;                     // placeholder [i, j, k]
  std::vector<Tensor> fetches;  // outputs and gradients
  std::vector<Tensor> randoms;  // random draws, compared bitwise
  std::vector<Operation*> train;
  std::string recipe;

  explicit RandomGraph(uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    x = placeholder(mesh, Shape({kI, kJ, kK}), float32, "x");
    Tensor w = get_variable(mesh, "w", Shape({kK, kL}), Initializer::normal(0.f, 0.5f));
    Tensor v = get_variable(mesh, "v", Shape({kJ}), Initializer::uniform(-1.f, 1.f));
    std::vector<Tensor> pool = {x, w, v, einsum({x, w}, Shape({kI, kJ, kL}))};
    auto any = [&]() { return pool[pick(static_cast<int>(pool.size()))]; };
    auto dim_of = [&](const Tensor& t) { return t.shape()[pick(t.shape().ndims())]; };
    for (int step = 0; step < 10; ++step) {
      Tensor a = any();
      Tensor r;
      switch (pick(14)) {
        case 0:
          r = tanh(a) + sigmoid(a);
          recipe += "unary ";
          break;
        case 1:
          r = a * any() + 0.5f;
          recipe += "mul ";
          break;
        case 2: {
          Tensor b = any();
          std::vector<Dimension> keep;
          for (const Dimension& d : a.shape().union_with(b.shape()))
            if (pick(2)) keep.push_back(d);
          if (keep.empty()) keep.push_back(a.shape()[0]);
          r = einsum({a, b}, Shape(keep));
          recipe += "einsum ";
          break;
        }
        case 3:
          r = reduce_sum(a, dim_of(a));
          recipe += "sum ";
          break;
        case 4:
          r = reduce_max(a, dim_of(a));
          recipe += "max ";
          break;
        case 5:
          r = softmax(a, dim_of(a));
          recipe += "softmax ";
          break;
        case 6: {
          const Dimension d = dim_of(a);
          r = slice(a, 1, d.size / 2, d.name) * 2.f;
          r = pad(r, 1, d.size - 1 - d.size / 2, d.name);
          recipe += "slice+pad ";
          break;
        }
        case 7: {
          const Dimension d = dim_of(a);
          r = shift(a, pick(2) ? 1 : -2, d, pick(2) == 1);
          recipe += "shift ";
          break;
        }
        case 8: {
          const Dimension d = dim_of(a);
          auto parts = split(a, d, {d.size / 2, d.size - d.size / 2});
          r = concat({parts[1], parts[0]}, d.name);
          recipe += "split+concat ";
          break;
        }
        case 9: {
          const Dimension d = dim_of(a);
          auto [vals, idx] = top_k(a, d, Dimension{"top", 2});
          r = vals + cast(idx, float32) + reduce_sum(one_hot(idx, d), Dimension{"top", 2}) * a;
          recipe += "top_k+one_hot ";
          break;
        }
        case 10: {
          // Indices 0,0,1,1,2,2 along j, for every i: [i, j] -> gather -> [i, j, l].
          Tensor idx = cast(broadcast(range(mesh, kJ, float32), Shape({kI, kJ})) * 0.5f, int32);
          r = gather(w, idx, kK);
          recipe += "gather ";
          break;
        }
        case 11: {
          Tensor u = random_uniform(mesh, a.shape(), -1.f, 1.f);
          randoms.push_back(u);
          r = a + u + dropout(a, 0.75f);
          recipe += "random ";
          break;
        }
        case 12: {
          const Shape s = a.shape();
          std::vector<Dimension> rev(s.dims().rbegin(), s.dims().rend());
          r = transpose(a, Shape(rev));
          r = rename_dimension(r, rev[0].name, "renamed" + std::to_string(step)) * 1.5f;
          recipe += "transpose+rename ";
          break;
        }
        case 13: {
          r = reshape(a, Shape({{"flat", a.shape().num_elements()}}));
          r = reshape(square(r), a.shape());
          recipe += "reshape ";
          break;
        }
      }
      if (r.shape().ndims() > 0)
        pool.push_back(r);  // scalars have no dimension to pick
      else
        pool.push_back(broadcast(r, Shape({kJ})));
    }
    std::vector<Tensor> sums;
    for (const Tensor& t : pool) sums.push_back(reduce_sum(t) * 0.01f);
    Tensor loss = add_n(sums);
    auto grads = gradients({loss}, {x, w, v});
    fetches = {loss, grads[0], grads[1], grads[2]};
    for (size_t i = 4; i < pool.size(); ++i) fetches.push_back(pool[i]);
    train = SgdOptimizer(0.1f).apply_grads({grads[1], grads[2]}, {w, v});
  }
};

// Every dimension name on its own mesh dimension (or none), so no tensor has
// two dimensions on one mesh dimension; only mesh dimensions that divide
// every size the name takes in the graph (slices shrink dimensions), so the
// rules are valid for every tensor. (Invalid ones are errors: layout_test.)
LayoutRules random_rules(const Graph& g, const MeshShape& mesh, std::mt19937& rng) {
  std::map<std::string, int64_t> gcd;
  for (const auto& op : g.operations())
    for (const Tensor& t : op->outputs())
      for (const Dimension& d : t.shape()) gcd[d.name] = std::gcd(gcd[d.name], d.size);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<bool> used(mesh.ndims(), false);
  for (const Dimension& d : {kI, kJ, kK, kL}) {
    std::vector<int> options;
    for (int a = 0; a < mesh.ndims(); ++a)
      if (!used[a] && gcd[d.name] % mesh.dims()[a].size == 0) options.push_back(a);
    if (options.empty() || rng() % 4 == 0) continue;
    const int a = options[rng() % options.size()];
    used[a] = true;
    pairs.emplace_back(d.name, mesh.dims()[a].name);
  }
  return LayoutRules(pairs);
}

class MeshPropertyTest : public ::testing::TestWithParam<const char*> {};

// reproducible: every mesh must give one (reproducible) processor's bits.
void check_random_graphs(const MeshShape& mesh_shape, bool reproducible) {
  const std::string mode = reproducible ? " reproducible" : "";
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RandomGraph ref(seed);
    HostTensor xv = testing::random_tensor(ref.x.shape(), seed);
    MeshConfig one_config;
    one_config.reproducible = reproducible;
    Session one(ref.g, one_config);
    std::vector<Tensor> all = ref.fetches;
    all.insert(all.end(), ref.randoms.begin(), ref.randoms.end());
    const auto want = one.run(all, {{ref.x, xv}}, ref.train);
    std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(mesh_shape.size()));
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      RandomGraph net(seed);
      MeshConfig c;
      c.mesh_shape = mesh_shape;
      c.layout = random_rules(net.g, mesh_shape, rng);
      c.impl = impl;
      c.timeout = std::chrono::milliseconds(20000);
      c.reproducible = reproducible;
      const std::string what = std::string("graph ") + std::to_string(seed) + " (" + net.recipe +
                               ") on " + mesh_shape.to_string() + " with \"" +
                               c.layout.to_string() + "\" " +
                               (impl == MeshImpl::kSimd ? "simd" : "placement") + mode;
      Session s(net.g, c);
      std::vector<Tensor> nall = net.fetches;
      nall.insert(nall.end(), net.randoms.begin(), net.randoms.end());
      std::vector<HostTensor> got;
      try {
        got = s.run(nall, {{net.x, xv}}, net.train);
      } catch (const Error& e) {
        FAIL() << what << ": " << e.what();
      }
      // Bit for bit in reproducible mode, else to float rounding.
      auto expect_match = [&](const HostTensor& g, const HostTensor& w, const std::string& which) {
        if (reproducible) {
          EXPECT_EQ(g.to_floats(), w.to_floats()) << what << ", " << which;
        } else {
          expect_close(g, w, what + ", " + which);
        }
      };
      for (size_t i = 0; i < ref.fetches.size(); ++i)
        expect_match(got[i], want[i], "fetch " + std::to_string(i));
      for (size_t i = ref.fetches.size(); i < all.size(); ++i)
        EXPECT_EQ(got[i].to_floats(), want[i].to_floats()) << what << ": random draws differ";
      for (const char* var : {"w", "v"})
        expect_match(s.variable_value(var), one.variable_value(var),
                     std::string("variable ") + var);
    }
  }
}

TEST_P(MeshPropertyTest, RandomGraphsMatchOneProcessor) {
  check_random_graphs(MeshShape(GetParam()), false);
}

TEST_P(MeshPropertyTest, ReproducibleRandomGraphsMatchOneProcessorBitForBit) {
  check_random_graphs(MeshShape(GetParam()), true);
}

INSTANTIATE_TEST_SUITE_P(Meshes, MeshPropertyTest,
                         ::testing::Values("all:1", "all:2", "all:3", "all:4", "all:8", "r:2;c:2",
                                           "r:2;c:4", "r:4;c:2", "x:2;y:2;z:2"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace mtf
