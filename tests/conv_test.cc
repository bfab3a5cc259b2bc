// Convolutions and pooling: against loop references, finite differences,
// Mesh TensorFlow's known values, and every layout (spatial dimensions split
// with halo exchanges, batch and channels split) on both mesh
// implementations.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::eval;
using testing::random_tensor;

// The geometry of one spatial axis, derived here independently of the
// library (TensorFlow's rules).
struct Axis {
  int64_t x, y, k, s, d, pad;
};
Axis axis(int64_t x, int64_t k, int64_t s, int64_t d, bool same) {
  const int64_t span = (k - 1) * d + 1;
  Axis a{x, 0, k, s, d, 0};
  if (same) {
    a.y = (x + s - 1) / s;
    a.pad = std::max<int64_t>((a.y - 1) * s + span - x, 0) / 2;
  } else {
    a.y = (x - span) / s + 1;
  }
  return a;
}

// Row-major index of a multi-index over `sizes`.
int64_t flat(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t f = 0;
  for (size_t i = 0; i < idx.size(); ++i) f = f * sizes[i] + idx[i];
  return f;
}
// Calls f for every multi-index over `sizes`.
void each(const std::vector<int64_t>& sizes, const std::function<void(std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// y[b, o..., co] = sum x[b, o*s + j*d - pad..., ci] * w[j..., ci, co].
std::vector<float> ref_conv(const std::vector<float>& x, const std::vector<float>& w, int64_t batch,
                            const std::vector<Axis>& ax, int64_t ci, int64_t co) {
  std::vector<int64_t> ys{batch}, xs{batch}, ks;
  for (const Axis& a : ax) {
    ys.push_back(a.y);
    xs.push_back(a.x);
    ks.push_back(a.k);
  }
  std::vector<int64_t> yall = ys, xall = xs, wall = ks;
  yall.push_back(co);
  xall.push_back(ci);
  wall.push_back(ci);
  wall.push_back(co);
  int64_t total = 1;
  for (int64_t v : yall) total *= v;
  std::vector<float> y(total, 0.f);
  each(ys, [&](std::vector<int64_t>& o) {
    for (int64_t c = 0; c < co; ++c) {
      double sum = 0;
      each(ks, [&](std::vector<int64_t>& j) {
        std::vector<int64_t> xi{o[0]};
        for (size_t a = 0; a < ax.size(); ++a) {
          const int64_t p = o[a + 1] * ax[a].s + j[a] * ax[a].d - ax[a].pad;
          if (p < 0 || p >= ax[a].x) return;
          xi.push_back(p);
        }
        for (int64_t i = 0; i < ci; ++i) {
          std::vector<int64_t> xf = xi, wf = j;
          xf.push_back(i);
          wf.push_back(i);
          wf.push_back(c);
          sum += static_cast<double>(x[flat(xf, xall)]) * w[flat(wf, wall)];
        }
      });
      std::vector<int64_t> yf = o;
      yf.push_back(c);
      y[flat(yf, yall)] = static_cast<float>(sum);
    }
  });
  return y;
}

// The transposed convolution: out[b, p..., co] = sum over in[b, o..., ci] *
// f[j..., co, ci] where o*s + j*d - pad = p (ax describes out -> in).
std::vector<float> ref_conv_transpose(const std::vector<float>& in, const std::vector<float>& f,
                                      int64_t batch, const std::vector<Axis>& ax, int64_t ci,
                                      int64_t co) {
  std::vector<int64_t> ins{batch}, outs{batch}, ks;
  for (const Axis& a : ax) {
    ins.push_back(a.y);
    outs.push_back(a.x);
    ks.push_back(a.k);
  }
  std::vector<int64_t> inall = ins, outall = outs, fall = ks;
  inall.push_back(ci);
  outall.push_back(co);
  fall.push_back(co);
  fall.push_back(ci);
  int64_t n = 1;
  for (int64_t s : outall) n *= s;
  std::vector<double> out(n, 0.0);
  each(ins, [&](std::vector<int64_t>& o) {
    each(ks, [&](std::vector<int64_t>& j) {
      std::vector<int64_t> p{o[0]};
      for (size_t a = 0; a < ax.size(); ++a) {
        const int64_t q = o[a + 1] * ax[a].s + j[a] * ax[a].d - ax[a].pad;
        if (q < 0 || q >= ax[a].x) return;
        p.push_back(q);
      }
      for (int64_t c = 0; c < co; ++c) {
        for (int64_t i = 0; i < ci; ++i) {
          std::vector<int64_t> inf = o, ff = j, of = p;
          inf.push_back(i);
          ff.push_back(c);
          ff.push_back(i);
          of.push_back(c);
          out[flat(of, outall)] += static_cast<double>(in[flat(inf, inall)]) * f[flat(ff, fall)];
        }
      }
    });
  });
  return std::vector<float>(out.begin(), out.end());
}

// Max or mean over each window's positions inside x, per channel.
std::vector<float> ref_pool(bool is_max, const std::vector<float>& x, int64_t batch,
                            const std::vector<Axis>& ax, int64_t c) {
  std::vector<int64_t> ys{batch}, xs{batch}, ks;
  for (const Axis& a : ax) {
    ys.push_back(a.y);
    xs.push_back(a.x);
    ks.push_back(a.k);
  }
  std::vector<int64_t> xall = xs;
  xall.push_back(c);
  std::vector<float> y;
  each(ys, [&](std::vector<int64_t>& o) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      int count = 0;
      each(ks, [&](std::vector<int64_t>& j) {
        std::vector<int64_t> xi{o[0]};
        for (size_t a = 0; a < ax.size(); ++a) {
          const int64_t p = o[a + 1] * ax[a].s + j[a] * ax[a].d - ax[a].pad;
          if (p < 0 || p >= ax[a].x) return;
          xi.push_back(p);
        }
        xi.push_back(ch);
        const double v = x[flat(xi, xall)];
        acc = is_max ? std::max(acc, v) : acc + v;
        ++count;
      });
      y.push_back(static_cast<float>(is_max ? acc : acc / count));
    }
  });
  return y;
}

// A spatial shape [b, names..., c] with the given sizes.
Shape spatial_shape(int64_t batch, const std::vector<std::string>& names,
                    const std::vector<int64_t>& sizes, const std::string& ch, int64_t c) {
  std::vector<Dimension> dims{{"b", batch}};
  for (size_t i = 0; i < names.size(); ++i) dims.push_back({names[i], sizes[i]});
  dims.push_back({ch, c});
  return Shape(dims);
}

struct ConvCase {
  std::vector<int64_t> x, k, s, d;
  bool same;
};

TEST(ConvTest, MatchesLoopReferenceIn1d2d3d) {
  const std::vector<ConvCase> cases = {
      {{9}, {3}, {1}, {1}, true},
      {{9}, {3}, {2}, {1}, true},
      {{10}, {4}, {2}, {1}, true},
      {{9}, {3}, {1}, {2}, true},
      {{9}, {3}, {1}, {1}, false},
      {{11}, {3}, {2}, {2}, false},
      {{7, 6}, {3, 2}, {1, 2}, {1, 1}, true},
      {{7, 6}, {3, 3}, {2, 1}, {1, 2}, false},
      {{5, 4, 6}, {3, 2, 3}, {1, 1, 2}, {1, 1, 1}, true},
      {{5, 5, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, false},
      {{40}, {5}, {1}, {1}, true},  // lines of several register-tile blocks
      {{3, 35}, {3, 5}, {1, 1}, {1, 2}, true},
  };
  const std::vector<std::string> names{"d0", "d1", "d2"}, fnames{"k0", "k1", "k2"};
  // Channels (in, out): one input channel and few columns take the direct
  // kernel (narrow or wide register tile; 16 outputs: the tile writes y
  // itself), many columns im2col and GEMM.
  const std::vector<std::pair<int64_t, int64_t>> channels = {{3, 2}, {1, 2},  {1, 20},
                                                             {8, 5}, {1, 16}, {2, 16}};
  for (size_t t = 0; t < cases.size() * channels.size(); ++t) {
    const ConvCase& c = cases[t % cases.size()];
    const auto [ci, co] = channels[t / cases.size()];
    SCOPED_TRACE("case " + std::to_string(t % cases.size()) + ", channels " + std::to_string(ci) +
                 " -> " + std::to_string(co));
    const int n = static_cast<int>(c.x.size());
    std::vector<std::string> sp(names.begin(), names.begin() + n);
    std::vector<Axis> ax;
    std::vector<int64_t> ysz;
    std::vector<Dimension> fd;
    for (int i = 0; i < n; ++i) {
      ax.push_back(axis(c.x[i], c.k[i], c.s[i], c.d[i], c.same));
      ysz.push_back(ax.back().y);
      fd.push_back({fnames[i], c.k[i]});
    }
    fd.push_back({"ci", ci});
    fd.push_back({"co", co});
    const Shape xs = spatial_shape(2, sp, c.x, "ci", ci);
    const HostTensor xv = random_tensor(xs, 1 + t), wv = random_tensor(Shape(fd), 50 + t);
    Graph g;
    Mesh mesh(g, "m");
    Tensor y =
        conv(import_host(mesh, xv), import_host(mesh, wv), c.s, c.same ? "SAME" : "VALID", c.d);
    ASSERT_EQ(y.shape(), spatial_shape(2, sp, ysz, "co", co));
    testing::expect_near_vectors(eval(y), ref_conv(xv.to_floats(), wv.to_floats(), 2, ax, ci, co),
                                 1e-5f);
  }
}

TEST(ConvTest, TransposeMatchesScatterReference) {
  const std::vector<ConvCase> cases = {
      {{4}, {3}, {2}, {1}, true},
      {{4}, {2}, {2}, {1}, true},
      {{5}, {3}, {1}, {1}, false},
      {{3}, {3}, {2}, {1}, false},
      {{3}, {1}, {2}, {1}, false},
      {{4}, {3}, {1}, {2}, true},
      {{3, 2}, {3, 2}, {2, 2}, {1, 1}, true},
      {{2, 3, 2}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, false},
  };
  const std::vector<std::string> names{"d0", "d1", "d2"}, fnames{"k0", "k1", "k2"};
  // Channels (in, out); one output channel (the convolution's input) takes
  // fast mode's tap-by-tap fold.
  const std::vector<std::pair<int64_t, int64_t>> channels = {{3, 2}, {4, 1}};
  for (size_t t = 0; t < cases.size() * channels.size(); ++t) {
    const ConvCase& c = cases[t % cases.size()];
    const auto [ci, co] = channels[t / cases.size()];
    SCOPED_TRACE("case " + std::to_string(t % cases.size()) + ", channels " + std::to_string(ci) +
                 " -> " + std::to_string(co));
    const int n = static_cast<int>(c.x.size());
    std::vector<std::string> sp(names.begin(), names.begin() + n);
    std::vector<Axis> ax;
    std::vector<int64_t> out_sizes;
    std::vector<Dimension> fd;
    for (int i = 0; i < n; ++i) {
      const int64_t span = (c.k[i] - 1) * c.d[i] + 1;
      const int64_t out =
          c.same ? c.x[i] * c.s[i] : c.x[i] * c.s[i] + std::max<int64_t>(span - c.s[i], 0);
      ax.push_back(axis(out, c.k[i], c.s[i], c.d[i], c.same));
      ASSERT_EQ(ax.back().y, c.x[i]);
      out_sizes.push_back(out);
      fd.push_back({fnames[i], c.k[i]});
    }
    fd.push_back({"co", co});
    fd.push_back({"ci", ci});
    const Shape xs = spatial_shape(2, sp, c.x, "ci", ci);
    const HostTensor xv = random_tensor(xs, 7 + t), fv = random_tensor(Shape(fd), 70 + t);
    Graph g;
    Mesh mesh(g, "m");
    Tensor y = conv_transpose(import_host(mesh, xv), import_host(mesh, fv), c.s,
                              c.same ? "SAME" : "VALID", c.d);
    ASSERT_EQ(y.shape(), spatial_shape(2, sp, out_sizes, "co", co));
    testing::expect_near_vectors(
        eval(y), ref_conv_transpose(xv.to_floats(), fv.to_floats(), 2, ax, ci, co), 1e-5f);
  }
}

TEST(ConvTest, PoolingMatchesReference) {
  for (bool is_max : {true, false}) {
    for (bool same : {true, false}) {
      for (const auto& [k, s] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {3, 1}, {3, 2}}) {
        SCOPED_TRACE(std::to_string(is_max) + " " + std::to_string(same) + " " + std::to_string(k) +
                     " " + std::to_string(s));
        const Shape xs = spatial_shape(2, {"h", "w"}, {7, 6}, "c", 3);
        const HostTensor xv = random_tensor(xs, 3);
        Graph g;
        Mesh mesh(g, "m");
        Tensor x = import_host(mesh, xv);
        Tensor y = is_max ? max_pool(x, {k, k}, {s, s}, same ? "SAME" : "VALID")
                          : avg_pool(x, {k, k}, {s, s}, same ? "SAME" : "VALID");
        const std::vector<Axis> ax{axis(7, k, s, 1, same), axis(6, k, s, 1, same)};
        testing::expect_near_vectors(eval(y), ref_pool(is_max, xv.to_floats(), 2, ax, 3), 1e-6f);
      }
    }
  }
}

// bfloat16 convolutions and pooling compute on float32 copies and round
// once: the float32 results of the same (rounded) values, rounded, on a
// spatially split mesh too (halos carry 2-byte elements).
TEST(ConvTest, BFloat16RoundsTheFloat32ResultOnce) {
  const Shape xs = spatial_shape(2, {"h", "w"}, {8, 6}, "ci", 2);
  const HostTensor xv = random_tensor(xs, 4).as_dtype(bfloat16);
  const HostTensor wv = random_tensor(Shape("kh:3;kw:3;ci:2;co:3"), 5).as_dtype(bfloat16);
  auto run = [&](DType dt, const char* mesh_shape, const char* layout) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = import_host(mesh, xv.as_dtype(dt));
    Tensor w = import_host(mesh, wv.as_dtype(dt));
    Tensor y = max_pool(relu(conv(x, w)), {2, 2}, {2, 2});
    EXPECT_EQ(y.dtype(), dt);
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    Session sess(g, mc);
    return sess.run(y).to_floats();
  };
  std::vector<float> want = run(float32, "", "");
  for (float& v : want) v = bfloat16_bits_to_float(float_to_bfloat16_bits(v));
  EXPECT_EQ(run(bfloat16, "", ""), want);
  EXPECT_EQ(run(bfloat16, "rows:2", "h:rows"), want);
}

// Mesh TensorFlow's layers_test conv1d case: x [length 4, depth 2], a width-3
// filter, SAME padding.
TEST(ConvTest, MeshTensorFlowConv1dKnownValues) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = import_host(
      mesh, HostTensor::from_floats(Shape("length:4;depth:2"), {1, 0, 0, 1, 1, 1, 2, 1}));
  Tensor w = import_host(mesh, HostTensor::from_floats(Shape("fw:3;depth:2;output:2"),
                                                       {1, -1, 0, 0, 2, -2, -1, 1, 3, -3, -2, 2}));
  EXPECT_EQ(eval(conv(x, w)), (std::vector<float>{0, 0, 1, -1, 5, -5, 4, -4}));
}

TEST(ConvTest, GradientsMatchFiniteDifferences) {
  const Shape xs = spatial_shape(2, {"h", "w"}, {5, 4}, "ci", 2);
  const Shape ws("kh:3;kw:2;ci:2;co:3");
  check_gradients({xs, ws}, [](const std::vector<Tensor>& v) {
    return conv(v[0], v[1], {2, 1}, "SAME", {1, 1});
  });
  check_gradients({xs, ws}, [](const std::vector<Tensor>& v) {
    return conv(v[0], v[1], {1, 1}, "VALID", {1, 2});
  });
  // conv_transpose: filter [k..., out, in].
  check_gradients({xs, Shape("kh:3;kw:2;co:3;ci:2")}, [](const std::vector<Tensor>& v) {
    return conv_transpose(v[0], v[1], {2, 2}, "SAME");
  });
  check_gradients({Shape("b:2;l:7;ci:2"), Shape("k:3;ci:2;co:2")},
                  [](const std::vector<Tensor>& v) { return conv(v[0], v[1], {2}, "VALID"); });
  check_gradients(
      {xs},
      [](const std::vector<Tensor>& v) {
        return max_pool(v[0], {2, 2}, {1, 2}, "SAME");
      },
      testing::distinct());
  check_gradients({xs}, [](const std::vector<Tensor>& v) {
    return avg_pool(v[0], {3, 2}, {2, 1}, "SAME");
  });
}

// Second derivatives through the gradient ops (a gradient of a gradient).
TEST(ConvTest, GradientOpsHaveGradients) {
  const Shape xs = spatial_shape(1, {"h"}, {6}, "ci", 2);
  const Shape ws("kh:3;ci:2;co:2");
  check_gradients({xs, ws}, [&](const std::vector<Tensor>& v) {
    Tensor y = conv(v[0], v[1], {2}, "SAME");
    Tensor loss = reduce_sum(y * y);
    std::vector<Tensor> g = gradients({loss}, {v[0], v[1]});
    return reduce_sum(g[0]) + reduce_sum(g[1] * g[1]);
  });
}

// A small network of every op, its outputs and gradients.
struct Net {
  Graph g;
  Tensor x, loss;
  std::vector<Tensor> fetches;
};

void build_net(Net& n) {
  Mesh mesh(n.g, "m");
  const Shape xs = spatial_shape(4, {"h", "w"}, {16, 16}, "c", 2);
  n.x = placeholder(mesh, xs, float32, "x");
  auto var = [&](const char* name, const Shape& s, uint64_t seed) {
    return import_host(mesh, random_tensor(s, seed, -0.5f, 0.5f), name);
  };
  Tensor f1 = var("f1", Shape("kh:3;kw:3;c:2;d:4"), 11);
  Tensor f2 = var("f2", Shape("kh:3;kw:3;d:4;e:4"), 12);
  Tensor f3 = var("f3", Shape("kh:2;kw:2;d:4;e:4"), 13);
  Tensor f4 = var("f4", Shape("kh:3;kw:3;d:4;e:2"), 14);
  Tensor h1 = relu(conv(n.x, f1, {1, 1}, "SAME"));      // 16x16
  Tensor p1 = max_pool(h1, {2, 2});                     // 8x8
  Tensor h2 = tanh(conv(p1, f2, {2, 2}, "SAME"));       // 4x4, e
  Tensor u = conv_transpose(h2, f3, {2, 2}, "SAME");    // 8x8, d
  Tensor a = avg_pool(u + p1, {3, 3}, {1, 1}, "SAME");  // 8x8
  Tensor h4 = conv(a, f4, {1, 1}, "SAME", {2, 2});      // 8x8 dilated
  Tensor weights = var("wts", h4.shape(), 15);
  n.loss = reduce_sum(h4 * weights);
  std::vector<Tensor> grads = gradients({n.loss}, {n.x, f1, f2, f3, f4});
  n.fetches = {h4, n.loss};
  n.fetches.insert(n.fetches.end(), grads.begin(), grads.end());
}

std::vector<HostTensor> run_net(const char* mesh_shape, const char* layout, MeshImpl impl,
                                bool reproducible) {
  Net n;
  build_net(n);
  MeshConfig mc;
  mc.mesh_shape = MeshShape(mesh_shape);
  mc.layout = LayoutRules(layout);
  mc.impl = impl;
  mc.reproducible = reproducible;
  Session s(n.g, mc);
  return s.run(n.fetches, {{n.x, random_tensor(n.x.shape(), 5)}});
}

struct MeshLayout {
  const char* mesh;
  const char* layout;
};
const std::vector<MeshLayout> kLayouts = {
    {"r:2", "h:r"},         {"r:4", "h:r"},         {"r:2;c:2", "h:r;w:c"},
    {"r:2;c:2", "b:r;h:c"}, {"r:2;c:4", "h:r;w:c"}, {"r:2", "d:r"},
    {"r:2;c:2", "w:r;d:c"}, {"r:4", "w:r"},         {"r:2;c:2", "c:r;e:c"},
};

TEST(ConvLayoutTest, EveryLayoutGivesOneProcessorsBitsInReproducibleMode) {
  const std::vector<HostTensor> one = run_net("", "", MeshImpl::kSimd, true);
  for (const MeshLayout& ml : kLayouts) {
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      SCOPED_TRACE(std::string(ml.mesh) + " " + ml.layout +
                   (impl == MeshImpl::kSimd ? " simd" : " placement"));
      const std::vector<HostTensor> got = run_net(ml.mesh, ml.layout, impl, true);
      ASSERT_EQ(got.size(), one.size());
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_EQ(got[i].to_floats(), one[i].to_floats()) << "fetch " << i;
    }
  }
}

TEST(ConvLayoutTest, EveryLayoutIsCloseInFastMode) {
  const std::vector<HostTensor> one = run_net("", "", MeshImpl::kSimd, false);
  for (const MeshLayout& ml : kLayouts) {
    SCOPED_TRACE(std::string(ml.mesh) + " " + ml.layout);
    const std::vector<HostTensor> got = run_net(ml.mesh, ml.layout, MeshImpl::kSimd, false);
    for (size_t i = 0; i < one.size(); ++i)
      testing::expect_close(got[i], one[i], "fetch " + std::to_string(i));
  }
}

// VALID padding and windows wider than a processor's block (dilation 3 on
// blocks of 2 rows: a processor's window reaches three neighbours).
TEST(ConvLayoutTest, ValidPaddingAndWideHalosOnSplitDimensions) {
  auto run = [](const char* mesh_shape, const char* layout, bool wide) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = import_host(mesh, random_tensor(Shape("b:2;h:12;c:2"), 8), "x");
    Tensor f = import_host(mesh, random_tensor(Shape("k:3;c:2;d:3"), 9), "f");
    Tensor y = wide ? conv(x, f, {1}, "SAME", {3}) : conv(x, f, {1}, "VALID");  // 12 / 10
    Tensor p = max_pool(x, {3}, {1}, wide ? "SAME" : "VALID");                  // 12 / 10
    Tensor loss = reduce_sum(y * y) + reduce_sum(p * p);
    std::vector<Tensor> grads = gradients({loss}, {x, f});
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    mc.reproducible = true;
    Session s(g, mc);
    return s.run({y, p, grads[0], grads[1]});
  };
  for (bool wide : {false, true}) {
    const std::vector<HostTensor> one = run("", "", wide);
    for (const MeshLayout& ml : std::vector<MeshLayout>{{"r:2", "h:r"}, {"r:6", "h:r"}}) {
      if (!wide && std::string(ml.mesh) == "r:6") continue;  // 10 rows do not split in 6
      SCOPED_TRACE(std::string(ml.mesh) + (wide ? " wide" : " valid"));
      const std::vector<HostTensor> got = run(ml.mesh, ml.layout, wide);
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_EQ(got[i].to_floats(), one[i].to_floats()) << "fetch " << i;
    }
  }
}

// Bytes a processor sends for a convolution on a split dimension: the halo
// rows (kernel - 1 split around it for SAME, one side for stride 2) times a
// row's bytes, never the whole dimension.
TEST(ConvLayoutTest, HaloCountersMatchTheFormula) {
  struct Case {
    int64_t k, s, d, rows;  // rows: most halo rows any processor sends
  };
  // h:16 over 4 processors (4 rows each); a row is b*w*c = 2*5*3 floats.
  for (const Case& c :
       std::vector<Case>{{3, 1, 1, 2}, {5, 1, 1, 4}, {3, 1, 2, 4}, {3, 2, 1, 1}, {2, 2, 1, 0}}) {
    SCOPED_TRACE(std::to_string(c.k) + " " + std::to_string(c.s) + " " + std::to_string(c.d));
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, Shape("b:2;h:16;w:5;c:3"), float32, "x");
    Tensor f = placeholder(mesh, Shape({{"k", c.k}, {"c", 3}, {"d", 2}}), float32, "f");
    // Only h is spatial here: w is a batch dimension of a 1-D convolution.
    Tensor y = conv(transpose(x, Shape("b:2;w:5;h:16;c:3")), f, {c.s}, "SAME", {c.d}, "the_conv");
    MeshConfig mc;
    mc.mesh_shape = MeshShape("r:4");
    mc.layout = LayoutRules("h:r");
    Session s(g, mc);
    const std::string counters = s.counters_text({y});
    const int64_t bytes = c.rows * 2 * 5 * 3 * 4;
    if (bytes == 0) {
      EXPECT_EQ(counters.find("halo"), std::string::npos) << counters;
      EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
      continue;
    }
    EXPECT_NE(counters.find("op the_conv: halo/r " + std::to_string(bytes) + " bytes"),
              std::string::npos)
        << counters;
    EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
  }
}

TEST(ConvTest, BadArgumentsAreClearErrors) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:2;h:6;c:3"), float32, "x");
  Tensor f = placeholder(mesh, Shape("k:3;c:3;d:2"), float32, "f");
  auto message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { conv(x, f, {1}, "FULL"); }).find("neither \"SAME\" nor \"VALID\""),
            std::string::npos);
  EXPECT_NE(message([&] { conv(x, f, {0}); }).find("strides must be >= 1"), std::string::npos);
  EXPECT_NE(message([&] {
              conv(x, f, {1, 1});
            }).find("2 strides for 1 spatial"),
            std::string::npos);
  Tensor wrong = placeholder(mesh, Shape("k:3;e:3;d:2"), float32, "wrong");
  EXPECT_NE(message([&] { conv(x, wrong); }).find("channel dimension c:3"), std::string::npos);
  Tensor big = placeholder(mesh, Shape("k:7;c:3;d:2"), float32, "big");
  EXPECT_NE(message([&] { conv(x, big, {1}, "VALID"); }).find("smaller than the window"),
            std::string::npos);
  EXPECT_THROW(max_pool(x, {}), ValueError);
  EXPECT_THROW(max_pool(x, {2, 2, 2, 2}), ValueError);
  // A split dimension the output cannot split alike (6 rows in, 3 out).
  Tensor y = conv(x, f, {2}, "SAME");
  MeshConfig mc;
  mc.mesh_shape = MeshShape("r:2");
  mc.layout = LayoutRules("h:r");
  Session s(g, mc);
  EXPECT_THROW(s.run(y, {{x, random_tensor(x.shape(), 1)}, {f, random_tensor(f.shape(), 2)}}),
               LayoutError);
}

}  // namespace
}  // namespace mtf
