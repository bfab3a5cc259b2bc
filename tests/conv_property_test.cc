// Property test for convolutions and pooling: random stacks of conv,
// conv_transpose, max_pool and avg_pool layers (random kernels, strides,
// SAME/VALID padding, dilation, channels, one input channel included), with
// the gradients of every filter and of the input, run under meshes of 2 to 8
// processors and random layout rules that split the batch, the spatial and
// the channel dimensions, with both mesh implementations: every output and
// gradient must equal the one-processor run (1e-5 relative; bit for bit in
// reproducible mode). The same stacks (smooth activations, no max pooling)
// pass a finite-difference check of their gradients.
#include <map>
#include <numeric>
#include <random>

#include "test_util.h"

namespace mtf {
namespace {

// One layer of a stack; the sizes it was drawn for are in the recipe.
struct Layer {
  enum Kind { kConv, kTranspose, kMaxPool, kAvgPool } kind;
  std::vector<int64_t> k, s, d;
  bool same;
  int64_t out_channels;
  Shape filter;  // conv and transpose only
};

const char* kind_name(Layer::Kind k) {
  switch (k) {
    case Layer::kConv:
      return "conv";
    case Layer::kTranspose:
      return "conv_transpose";
    case Layer::kMaxPool:
      return "max_pool";
    case Layer::kAvgPool:
      return "avg_pool";
  }
  return "?";
}

// Output size along one axis, as mtf::conv (conv_transpose: its inverse).
int64_t out_size(bool transpose, int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
  const int64_t span = (k - 1) * d + 1;
  if (transpose) return same ? in * s : in * s + std::max<int64_t>(span - s, 0);
  if (same) return (in + s - 1) / s;
  return in >= span ? (in - span) / s + 1 : 0;
}

struct Recipe {
  Shape x;
  std::vector<Layer> layers;
  std::string text;
};

// A stack of 2-4 layers on [b:4, h:16, w:12, c0:1 or 2]; spatial sizes stay
// in [2, 32]. smooth: no max pooling (for finite differences).
Recipe random_recipe(uint32_t seed, bool smooth) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Recipe r;
  int64_t c = 1 + pick(2);
  std::vector<int64_t> size = {16, 12};
  r.x = Shape({{"b", 4}, {"h", size[0]}, {"w", size[1]}, {"c0", c}});
  const int n = 2 + pick(3);
  while (static_cast<int>(r.layers.size()) < n) {
    Layer l;
    l.kind = static_cast<Layer::Kind>(pick(4));
    if (smooth && l.kind == Layer::kMaxPool) continue;
    l.same = pick(2) == 0;
    std::vector<int64_t> next(2);
    for (int a = 0; a < 2; ++a) {
      const bool pool = l.kind == Layer::kMaxPool || l.kind == Layer::kAvgPool;
      l.k.push_back(1 + pick(pool ? 3 : 5));
      l.s.push_back(1 + pick(l.kind == Layer::kTranspose ? 2 : 2));
      l.d.push_back(pool || l.kind == Layer::kTranspose || pick(3) ? 1 : 2);
      next[a] = out_size(l.kind == Layer::kTranspose, size[a], l.k[a], l.s[a], l.d[a], l.same);
    }
    if (next[0] < 2 || next[1] < 2 || next[0] > 32 || next[1] > 32) continue;
    const int i = static_cast<int>(r.layers.size());
    const std::string ch = "c" + std::to_string(i + 1), in_ch = "c" + std::to_string(i);
    l.out_channels = l.kind == Layer::kMaxPool || l.kind == Layer::kAvgPool ? c : 2 + 2 * pick(2);
    if (l.kind == Layer::kConv || l.kind == Layer::kTranspose) {
      const Dimension k0{"k" + std::to_string(i) + "_0", l.k[0]},
          k1{"k" + std::to_string(i) + "_1", l.k[1]};
      l.filter = l.kind == Layer::kConv ? Shape({k0, k1, {in_ch, c}, {ch, l.out_channels}})
                                        : Shape({k0, k1, {ch, l.out_channels}, {in_ch, c}});
    }
    r.text += std::string(kind_name(l.kind)) + " k" + std::to_string(l.k[0]) + "x" +
              std::to_string(l.k[1]) + " s" + std::to_string(l.s[0]) + "x" +
              std::to_string(l.s[1]) + " d" + std::to_string(l.d[0]) + "x" +
              std::to_string(l.d[1]) + (l.same ? " SAME" : " VALID") + " -> " +
              std::to_string(next[0]) + "x" + std::to_string(next[1]) + "x" +
              std::to_string(l.out_channels) + "; ";
    size = next;
    c = l.out_channels;
    r.layers.push_back(l);
  }
  return r;
}

// The stack on x with filters[i] for the i-th conv or transpose; pooling
// keeps the channel dimension's name, so it is renamed to the next one.
Tensor build(const Recipe& r, const Tensor& x, const std::vector<Tensor>& filters, bool smooth) {
  Tensor h = x;
  size_t f = 0;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const Layer& l = r.layers[i];
    const std::string padding = l.same ? "SAME" : "VALID";
    switch (l.kind) {
      case Layer::kConv:
        h = conv(h, filters[f++], l.s, padding, l.d);
        break;
      case Layer::kTranspose:
        h = conv_transpose(h, filters[f++], l.s, padding, l.d);
        break;
      case Layer::kMaxPool:
      case Layer::kAvgPool: {
        h = l.kind == Layer::kMaxPool ? max_pool(h, l.k, l.s, padding)
                                      : avg_pool(h, l.k, l.s, padding);
        h = rename_dimension(h, "c" + std::to_string(i), "c" + std::to_string(i + 1));
        break;
      }
    }
    if (i + 1 < r.layers.size()) h = smooth ? tanh(h) : relu(h) + 0.1f * h;
  }
  return h;
}

std::vector<Shape> filter_shapes(const Recipe& r) {
  std::vector<Shape> s;
  for (const Layer& l : r.layers)
    if (l.kind == Layer::kConv || l.kind == Layer::kTranspose) s.push_back(l.filter);
  return s;
}

struct Net {
  Graph g;
  Mesh mesh{g, "mesh"};
  std::vector<Tensor> inputs;  // x, then the filters
  std::vector<Tensor> fetches;
  explicit Net(const Recipe& r) {
    inputs.push_back(placeholder(mesh, r.x, float32, "x"));
    const std::vector<Shape> fs = filter_shapes(r);
    for (size_t i = 0; i < fs.size(); ++i)
      inputs.push_back(placeholder(mesh, fs[i], float32, "f" + std::to_string(i)));
    const Tensor y = build(r, inputs[0], {inputs.begin() + 1, inputs.end()}, false);
    const Tensor w = import_host(mesh, testing::random_tensor(y.shape(), 77, 0.5f, 1.5f));
    const Tensor loss = reduce_sum(y * w);
    fetches = gradients({loss}, inputs);
    fetches.insert(fetches.begin(), {y, loss});
  }
  Feeds feeds(uint32_t seed) const {
    Feeds f;
    for (size_t i = 0; i < inputs.size(); ++i)
      f.emplace_back(inputs[i], testing::random_tensor(inputs[i].shape(), seed + i, -1.f, 1.f));
    return f;
  }
};

// Every dimension name that can be split (batch, spatial, channels) on its
// own mesh dimension, or none, where the mesh dimension divides every size
// the name takes in the graph.
LayoutRules random_rules(const Graph& g, const MeshShape& mesh, std::mt19937& rng) {
  std::map<std::string, int64_t> gcd;
  for (const auto& op : g.operations())
    for (const Tensor& t : op->outputs())
      for (const Dimension& d : t.shape()) gcd[d.name] = std::gcd(gcd[d.name], d.size);
  std::vector<std::string> names;
  for (const auto& [name, size] : gcd)
    if (name == "b" || name == "h" || name == "w" || name[0] == 'c') names.push_back(name);
  std::shuffle(names.begin(), names.end(), rng);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<bool> used(mesh.ndims(), false);
  for (const std::string& name : names) {
    std::vector<int> options;
    for (int a = 0; a < mesh.ndims(); ++a)
      if (!used[a] && gcd[name] % mesh.dims()[a].size == 0) options.push_back(a);
    if (options.empty() || rng() % 3 == 0) continue;
    const int a = options[rng() % options.size()];
    used[a] = true;
    pairs.emplace_back(name, mesh.dims()[a].name);
  }
  return LayoutRules(pairs);
}

class ConvPropertyTest : public ::testing::TestWithParam<const char*> {};

void check_random_stacks(const MeshShape& mesh_shape, bool reproducible) {
  int split_spatial = 0;
  for (uint32_t seed = 1; seed <= 16; ++seed) {
    const Recipe r = random_recipe(seed, false);
    Net ref(r);
    MeshConfig one_config;
    one_config.reproducible = reproducible;
    Session one(ref.g, one_config);
    const std::vector<HostTensor> want = one.run(ref.fetches, ref.feeds(seed));
    std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(mesh_shape.size()));
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      Net net(r);
      MeshConfig c;
      c.mesh_shape = mesh_shape;
      c.layout = random_rules(net.g, mesh_shape, rng);
      c.impl = impl;
      c.reproducible = reproducible;
      const std::string rules = c.layout.to_string();
      split_spatial +=
          rules.find("h:") != std::string::npos || rules.find("w:") != std::string::npos;
      const std::string what = "stack " + std::to_string(seed) + " (" + r.text + ") on " +
                               mesh_shape.to_string() + " with \"" + rules + "\" " +
                               (impl == MeshImpl::kSimd ? "simd" : "placement") +
                               (reproducible ? " reproducible" : "");
      Session s(net.g, c);
      std::vector<HostTensor> got;
      try {
        got = s.run(net.fetches, net.feeds(seed));
      } catch (const Error& e) {
        FAIL() << what << ": " << e.what();
      }
      for (size_t i = 0; i < want.size(); ++i) {
        if (reproducible) {
          EXPECT_EQ(got[i].to_floats(), want[i].to_floats()) << what << ", fetch " << i;
        } else {
          testing::expect_close(got[i], want[i], what + ", fetch " + std::to_string(i));
        }
      }
    }
  }
  // The draws must exercise halos, not only batch and channel splits.
  EXPECT_GE(split_spatial, 6) << "too few layouts split h or w on " << mesh_shape.to_string();
}

TEST_P(ConvPropertyTest, RandomStacksMatchOneProcessor) {
  check_random_stacks(MeshShape(GetParam()), false);
}

TEST_P(ConvPropertyTest, ReproducibleRandomStacksMatchOneProcessorBitForBit) {
  check_random_stacks(MeshShape(GetParam()), true);
}

INSTANTIATE_TEST_SUITE_P(Meshes, ConvPropertyTest,
                         ::testing::Values("all:2", "all:4", "r:2;c:2", "r:2;c:4", "all:8",
                                           "x:2;y:2;z:2"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(ConvPropertyTest, RandomSmoothStacksMatchFiniteDifferences) {
  for (uint32_t seed = 100; seed < 106; ++seed) {
    const Recipe r = random_recipe(seed, true);
    SCOPED_TRACE("stack " + std::to_string(seed) + ": " + r.text);
    std::vector<Shape> shapes = {r.x};
    for (const Shape& s : filter_shapes(r)) shapes.push_back(s);
    testing::check_gradients(shapes, [&](const std::vector<Tensor>& v) {
      return build(r, v[0], {v.begin() + 1, v.end()}, true);
    });
  }
}

}  // namespace
}  // namespace mtf
