// bfloat16 tensors through every kind of op: each op computes in float32 on
// the bfloat16 values and rounds its result once, so its output equals the
// float32 op's on the same (rounded) inputs, rounded to bfloat16 — exactly.
// A bfloat16 MLP trains on one processor and on a 2x2 mesh.
#include <cmath>

#include "expect_error.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::eval;

std::vector<float> rounded(const std::vector<float>& v) {
  return HostTensor::from_floats(Shape({Dimension{"n", static_cast<int64_t>(v.size())}}), v,
                                 bfloat16)
      .to_floats();
}

class BFloat16OpsTest : public ::testing::Test {
 protected:
  Graph g;
  Mesh mesh{g, "mesh"};
  // x as a float32 input holding bfloat16 values, and the same as bfloat16.
  Tensor exact(const HostTensor& h) {
    return import_host(mesh, h.as_dtype(bfloat16).as_dtype(float32));
  }
  Tensor narrow(const HostTensor& h) { return cast(exact(h), bfloat16); }
  // The op in bfloat16 against the float32 op on the same values, rounded.
  void expect_rounded_float32(Tensor in_bf16, Tensor in_f32,
                              const std::function<Tensor(const Tensor&)>& op, const char* what) {
    SCOPED_TRACE(what);
    const Tensor b = op(in_bf16);
    ASSERT_EQ(b.dtype(), bfloat16);
    EXPECT_EQ(eval(cast(b, float32)), rounded(eval(op(in_f32))));
  }
};

TEST_F(BFloat16OpsTest, EachOpRoundsTheFloat32ResultOnce) {
  const HostTensor x = testing::random_tensor(Shape("a:3;b:5"), 11, -2.f, 2.f);
  const HostTensor y = testing::random_tensor(Shape("b:5"), 12, 0.5f, 2.f);
  const Tensor xb = narrow(x), xf = exact(x), yb = narrow(y), yf = exact(y);
  using F = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, F>> unary = {
      {"relu", [](const Tensor& t) { return relu(t); }},
      {"gelu", [](const Tensor& t) { return gelu(t); }},
      {"exp", [](const Tensor& t) { return exp(t); }},
      {"tanh", [](const Tensor& t) { return tanh(t); }},
      {"square", [](const Tensor& t) { return square(t); }},
      {"negative", [](const Tensor& t) { return -t; }},
      // The scalar takes the tensor's dtype: 0.3 in bfloat16 is 0.30078125.
      {"scale", [](const Tensor& t) { return t * (t.dtype() == bfloat16 ? 0.3f : 0.30078125f); }},
      {"reduce_sum", [](const Tensor& t) { return reduce_sum(t, Shape("a:3")); }},
      {"reduce_max", [](const Tensor& t) { return reduce_max(t, Shape("b:5")); }},
      {"reduce_mean", [](const Tensor& t) { return reduce_mean(t); }},
      {"transpose", [](const Tensor& t) { return transpose(t, Shape("b:5;a:3")); }},
  };
  for (const auto& [name, op] : unary) expect_rounded_float32(xb, xf, op, name);
  expect_rounded_float32(
      xb, xf, [&](const Tensor& t) { return t * (t.dtype() == bfloat16 ? yb : yf); }, "multiply");
  expect_rounded_float32(
      xb, xf,
      [&](const Tensor& t) {
        return einsum({t, t.dtype() == bfloat16 ? yb : yf}, Shape("a:3"));
      },
      "einsum");
}

// softmax of bfloat16 rounds each elementwise step (Mesh TensorFlow's
// order): within a few bfloat16 roundings of the float32 softmax, and the
// rows still sum to one within them.
TEST_F(BFloat16OpsTest, SoftmaxRoundsEachStepAndSumsInFloat32) {
  const HostTensor x = testing::random_tensor(Shape("a:3;b:40"), 13, -6.f, 6.f);
  const std::vector<float> got = eval(cast(softmax(narrow(x), Dimension{"b", 40}), float32));
  const std::vector<float> want = eval(softmax(exact(x), Dimension{"b", 40}));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.02f * want[i] + 1e-6f);
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int c = 0; c < 40; ++c) sum += got[r * 40 + c];
    EXPECT_NEAR(sum, 1.0, 0.02);
  }
}

// The same MLP step in bfloat16 (variables, activations, gradients) on one
// processor and on a 2x2 mesh: the loss falls as float32's does (within 3%
// at every step), the mesh reads the one processor's losses within 2%, and
// in reproducible mode every layout reads them to the bit.
TEST(BFloat16Training, MlpTrainsOnOneProcessorAndOnAMesh) {
  auto losses = [](const MeshConfig& config, DType dt = bfloat16) {
    Graph g;
    Mesh mesh(g, "mesh");
    const Dimension batch{"batch", 32}, io{"io", 16}, hidden{"hidden", 32}, cls{"cls", 4};
    Tensor x = placeholder(mesh, Shape({batch, io}), dt, "x");
    Tensor labels = placeholder(mesh, Shape({batch}), int32, "labels");
    Tensor w1 = get_variable(mesh, "w1", Shape({io, hidden}), Initializer::glorot_uniform(), dt);
    Tensor w2 = get_variable(mesh, "w2", Shape({hidden, cls}), Initializer::glorot_uniform(), dt);
    Tensor logits =
        einsum({relu(einsum({x, w1}, Shape({batch, hidden}))), w2}, Shape({batch, cls}));
    Tensor loss = reduce_mean(
        cast(softmax_cross_entropy_with_logits(logits, one_hot(labels, cls, 1.f, 0.f, dt), cls),
             float32));
    auto train = SgdOptimizer(0.5f).minimize(loss);
    Session session(g, config);
    std::vector<float> xs(32 * 16);
    std::vector<int32_t> ys(32);
    for (int i = 0; i < 32; ++i) {
      ys[i] = i % 4;
      for (int j = 0; j < 16; ++j) xs[i * 16 + j] = (j % 4 == ys[i] ? 1.f : 0.f) + 0.01f * j;
    }
    const Feeds feeds = {{x, HostTensor::from_floats(Shape({batch, io}), xs, dt)},
                         {labels, HostTensor::from_ints(Shape({batch}), ys)}};
    std::vector<float> out;
    for (int step = 0; step < 30; ++step)
      out.push_back(session.run({loss}, feeds, train)[0].to_floats()[0]);
    EXPECT_EQ(session.variable_value("w1").dtype(), dt);
    return out;
  };
  const std::vector<float> one = losses(MeshConfig());
  const std::vector<float> f32 = losses(MeshConfig(), float32);
  EXPECT_LT(one.back(), 0.05f * one.front());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(one[i], f32[i], 0.03f * f32[i]) << i;
  MeshConfig mesh;
  mesh.mesh_shape = MeshShape("rows:2;cols:2");
  mesh.layout = LayoutRules("batch:rows;hidden:cols");
  const std::vector<float> split = losses(mesh);
  ASSERT_EQ(split.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(split[i], one[i], 0.02f * one[i]) << i;
  // Reproducible mode: every layout and both mesh implementations give the
  // one processor's bits in bfloat16 too.
  MeshConfig single;
  single.reproducible = true;
  const std::vector<float> want = losses(single);
  for (const char* layout : {"batch:rows;hidden:cols", "hidden:rows", "batch:cols"}) {
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      MeshConfig c = mesh;
      c.layout = LayoutRules(layout);
      c.impl = impl;
      c.reproducible = true;
      EXPECT_EQ(losses(c), want) << layout << " " << mesh_impl_name(impl);
    }
  }
}

// bfloat16 layer_norm's gradients (with respect to x, written by hand, and
// to scale and bias, through its ops) against float32 layer_norm's on the same
// rounded input and upstream gradient, within bfloat16's rounding.
TEST(VariableDTypeTest, LayerNormGradientsInBFloat16MatchFloat32) {
  const Dimension batch{"batch", 6}, model{"model", 16};
  const Shape shape({batch, model});
  const HostTensor xv = testing::random_tensor(shape, 7, -2.f, 3.f).as_dtype(bfloat16);
  const HostTensor dyv = testing::random_tensor(shape, 8, -1.f, 1.f).as_dtype(bfloat16);
  std::vector<std::vector<float>> got[2];
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    Graph g;
    Mesh mesh(g, "mesh");
    const DType dt = bf16 ? bfloat16 : float32;
    Tensor x = placeholder(mesh, shape, dt, "x");
    Tensor dy = placeholder(mesh, shape, dt, "dy");
    // A scale and bias away from 1 and 0, so that their gradients' paths count.
    Tensor y = layers::layer_norm(x * 1.5f + 0.25f, model, "ln");
    Tensor loss = reduce_sum(cast(y * dy, float32));
    std::vector<Tensor> wrt{x};
    for (const Tensor& v : g.trainable_variables()) wrt.push_back(v);
    ASSERT_EQ(wrt.size(), 3u);
    Session s(g);
    for (const Tensor& v : g.trainable_variables()) {
      HostTensor init(v.shape(), float32);
      for (int64_t i = 0; i < init.num_elements(); ++i)
        init.data<float>()[i] = (v.op().name().find("scale") != std::string::npos ? 0.7f : -0.2f) +
                                0.05f * static_cast<float>(i % 5);
      s.set_variable_value(v.op().name(), init);
    }
    const std::vector<HostTensor> out =
        s.run(gradients({loss}, wrt), {{x, xv.as_dtype(dt)}, {dy, dyv.as_dtype(dt)}});
    for (const HostTensor& t : out) got[bf16].push_back(t.as_dtype(float32).to_floats());
  }
  const char* names[] = {"x", "scale", "bias"};
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(names[k]);
    float largest = 0;
    for (float v : got[0][k]) largest = std::max(largest, std::fabs(v));
    ASSERT_GT(largest, 0.1f);
    for (size_t i = 0; i < got[0][k].size(); ++i)
      EXPECT_NEAR(got[1][k][i], got[0][k][i], 0.03f * largest) << i;
  }
}

}  // namespace
}  // namespace mtf

namespace mtf {
namespace {

// VariableDType(float32, float32, bfloat16), the paper's: the variable is
// stored and updated in float32 and read as bfloat16.
TEST(VariableDTypeTest, Float32SlicesReadAsBFloat16) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Dimension a{"a", 4};
  Tensor w = get_variable(mesh, "w", Shape({a}), Initializer::constant(1.0f),
                          VariableDType(float32, float32, bfloat16));
  EXPECT_EQ(w.dtype(), bfloat16);
  ASSERT_EQ(g.trainable_variables().size(), 1u);
  EXPECT_EQ(g.trainable_variables()[0].dtype(), float32);
  Tensor loss = reduce_sum(cast(w * w, float32));
  auto train = SgdOptimizer(0.001f).minimize(loss);
  Session s(g);
  s.run({loss}, {}, train);
  const HostTensor value = s.variable_value("w");
  EXPECT_EQ(value.dtype(), float32);
  // 1 - 0.001 * 2: kept in float32 (bfloat16 would round it back to 1).
  EXPECT_EQ(value.to_floats(), std::vector<float>(4, 1.0f - 0.001f * 2.0f));
  // assign through what get_variable returned, with a float32 value.
  Operation* set = assign(w, constant(mesh, 0.25f, Shape({a})));
  s.run({}, {}, {set});
  EXPECT_EQ(s.variable_value("w").to_floats(), std::vector<float>(4, 0.25f));
}

// bfloat16 slices with optimizers that keep slots (Momentum, Adam): the slots
// are bfloat16 like the variable, and the loss falls.
TEST(VariableDTypeTest, OptimizersWithSlotsUpdateBFloat16Slices) {
  for (int which = 0; which < 2; ++which) {
    Graph g;
    Mesh mesh(g, "mesh");
    Tensor w = get_variable(mesh, "w", Shape("a:4"), Initializer::constant(1.0f), bfloat16);
    Tensor loss = reduce_sum(cast(w * w, float32));
    const auto train = which == 0 ? AdamOptimizer(0.05f).minimize(loss)
                                  : MomentumOptimizer(0.05f, 0.9f).minimize(loss);
    Session s(g);
    const float first = s.run({loss}, {}, train)[0].to_floats()[0];
    float last = first;
    for (int i = 0; i < 5; ++i) last = s.run({loss}, {}, train)[0].to_floats()[0];
    EXPECT_LT(last, first) << which;
    EXPECT_EQ(s.variable_value("w").dtype(), bfloat16);
    EXPECT_EQ(s.variable_value(which == 0 ? "w/adam_m" : "w/momentum").dtype(), bfloat16);
  }
}

// Adafactor on bfloat16 slices: the update in float32 from the widened
// value, float32 slots (factored and full), the new value rounded once; it
// trains as the float32 slices do.
TEST(VariableDTypeTest, AdafactorUpdatesBFloat16SlicesInFloat32) {
  auto run = [](DType slice) {
    Graph g;
    Mesh mesh(g, "mesh");
    Tensor w = get_variable(mesh, "w", Shape("a:64;b:32"), Initializer::normal(0.f, 1.f),
                            VariableDType(float32, slice, slice));
    Tensor v = get_variable(mesh, "v", Shape("a:64"), Initializer::constant(1.0f),
                            VariableDType(float32, slice, slice));
    Tensor loss = reduce_sum(cast(square(w) + v * v, float32));
    const auto train = AdafactorOptimizer().minimize(loss);
    Session s(g);
    std::vector<float> losses;
    for (int i = 0; i < 20; ++i) losses.push_back(s.run({loss}, {}, train)[0].to_floats()[0]);
    EXPECT_EQ(s.variable_value("w").dtype(), slice);
    EXPECT_EQ(s.variable_value("w/adafactor_vr").dtype(), float32);
    EXPECT_EQ(s.variable_value("v/adafactor_v").dtype(), float32);
    return losses;
  };
  const std::vector<float> bf16 = run(bfloat16), f32 = run(float32);
  EXPECT_LT(bf16.back(), 0.8f * bf16.front());
  // Each step rounds the new weights to 8 bits of mantissa: the trajectories
  // part by a few percent over 20 steps.
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_NEAR(bf16[i], f32[i], 0.05f * f32[i]) << i;
}

TEST(VariableDTypeTest, BadCombinationsAreClearErrors) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Shape shape("a:2");
  testing::expect_error<DTypeError>(
      [&] {
        get_variable(mesh, "m", shape, Initializer::zeros(),
                     VariableDType(bfloat16, bfloat16, bfloat16));
      },
      {"get_variable \"m\"", "bfloat16 master", "keep the master float32"});
  testing::expect_error<DTypeError>(
      [&] {
        get_variable(mesh, "i", shape, Initializer::zeros(),
                     VariableDType(float32, float32, int32));
      },
      {"int32 slices or activations"});
  testing::expect_error<DTypeError>(
      [&] {
        get_variable(mesh, "j", shape, Initializer::zeros(), VariableDType(int32, int32, bfloat16));
      },
      {"int32 master with float"});
  EXPECT_EQ(VariableDType::of(bfloat16).master, float32);
  EXPECT_EQ(VariableDType::of(bfloat16).slice, bfloat16);
}

// Layers given bfloat16 activations keep float32 weights, read as
// bfloat16; layer_norm's statistics are float32.
TEST(VariableDTypeTest, LayersOnBFloat16InputsKeepFloat32Weights) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Dimension batch{"batch", 8}, io{"io", 6}, hidden{"hidden", 5};
  const HostTensor xv = testing::random_tensor(Shape({batch, io}), 3, -1.f, 1.f);
  Tensor x = cast(import_host(mesh, xv), bfloat16);
  Tensor h = layers::layer_norm(layers::dense(x, hidden, "d"), hidden, "ln");
  EXPECT_EQ(h.dtype(), bfloat16);
  for (const Tensor& v : g.trainable_variables()) EXPECT_EQ(v.dtype(), float32) << v.describe();
  // The same layers in float32 on the bfloat16-rounded input, rounded: close
  // (the kernel is read as bfloat16, so not bit-equal).
  Graph g2;
  Mesh mesh2(g2, "mesh");
  Tensor x2 = import_host(mesh2, xv.as_dtype(bfloat16).as_dtype(float32));
  Tensor h2 = layers::layer_norm(layers::dense(x2, hidden, "d"), hidden, "ln");
  testing::expect_near_vectors(testing::eval(cast(h, float32)), testing::eval(h2), 0.05f);
}

}  // namespace
}  // namespace mtf
