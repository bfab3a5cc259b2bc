// Elementwise fusion: the fused kernel gives the unfused kernels' bits, the
// lowering's pass groups only what it may, outputs take over dying inputs,
// and whole training runs are bit-identical with and without fusion.
#include "lowering/fusion.h"

#include <cstring>
#include <random>

#include "exec/step_runner.h"
#include "kernels/fused_elementwise.h"
#include "models/transformer.h"
#include "test_util.h"
#include "tiny_transformer.h"

namespace mtf {
namespace {

using kernels::BinaryFn;
using kernels::FusedExpr;
using kernels::FusedInstr;
using kernels::UnaryFn;

HostTensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  HostTensor t(shape, float32);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

using testing::same_bits;

struct ExprBuilder {
  FusedExpr e;
  int input(int i) {
    e.instrs.push_back({FusedInstr::Kind::kInput, i});
    e.num_inputs = std::max(e.num_inputs, i + 1);
    return last();
  }
  int unary(UnaryFn fn, int a) {
    FusedInstr in;
    in.kind = FusedInstr::Kind::kUnary;
    in.unary = fn;
    in.a = a;
    e.instrs.push_back(in);
    return last();
  }
  int binary(BinaryFn fn, int a, int b) {
    FusedInstr in;
    in.kind = FusedInstr::Kind::kBinary;
    in.binary = fn;
    in.a = a;
    in.b = b;
    e.instrs.push_back(in);
    return last();
  }
  int last() const { return static_cast<int>(e.instrs.size()) - 1; }
};

// bfloat16 operands: read widened a block at a time, each op's values
// rounded where its output is bfloat16 — the bits of the ops run one by one
// on float32 copies, each bfloat16 result rounded once.
TEST(FusedKernelTest, BFloat16OperandsGiveTheBitsOfTheKernelsRunOneByOne) {
  std::mt19937 rng(11);
  for (int64_t d : {1, 9, 700}) {
    SCOPED_TRACE(d);
    const Shape full({{"r", 5}, {"d", d}});
    const HostTensor x = random_tensor(full, rng).as_dtype(bfloat16);
    const HostTensor m = random_tensor(Shape({{"r", 5}}), rng).as_dtype(bfloat16);
    const HostTensor y = random_tensor(Shape({{"d", d}, {"r", 5}}), rng).as_dtype(bfloat16);
    // a = x - m (bfloat16), e = exp(a) (float32), out = e * y (bfloat16).
    HostTensor a(full, float32), e(full, float32), out(full, float32);
    kernels::binary(BinaryFn::kSub, x.as_dtype(float32), m.as_dtype(float32), a);
    a = a.as_dtype(bfloat16);
    kernels::unary(UnaryFn::kExp, a.as_dtype(float32), e);
    kernels::binary(BinaryFn::kMul, e, y.as_dtype(float32), out);
    out = out.as_dtype(bfloat16);

    ExprBuilder eb;
    const int ix = eb.input(0), im = eb.input(1), iy = eb.input(2);
    const int ia = eb.binary(BinaryFn::kSub, ix, im);
    eb.e.instrs[ia].round_bfloat16 = true;
    const int ie = eb.unary(UnaryFn::kExp, ia);
    const int io = eb.binary(BinaryFn::kMul, ie, iy);
    eb.e.instrs[io].round_bfloat16 = true;
    eb.e.outputs = {ia, ie, io};
    HostTensor got_a(full, bfloat16), got_e(full, float32), got_out(full, bfloat16);
    kernels::fused_elementwise(eb.e, {&x, &m, &y}, {&got_a, &got_e, &got_out});
    EXPECT_TRUE(same_bits(got_a, a));
    EXPECT_TRUE(same_bits(got_e, e));
    EXPECT_TRUE(same_bits(got_out, out));
  }
}

// The feed-forward block's relu(x), and relu_grad(x) * g as one-pass rows
// reading bfloat16 in place: the bits of the kernels run one by one, with
// NaN, signed zeros and negatives among x.
TEST(FusedKernelTest, ReluAndItsGradientAsRowsKeepTheirBits) {
  std::mt19937 rng(5);
  for (int64_t d : {3, 512, 1000}) {
    SCOPED_TRACE(d);
    const Shape full({{"r", 4}, {"d", d}});
    HostTensor xf = random_tensor(full, rng);
    xf.data<float>()[0] = std::nanf("");
    xf.data<float>()[1] = -0.0f;
    xf.data<float>()[2] = 0.0f;
    const HostTensor x = xf.as_dtype(bfloat16), g = random_tensor(full, rng).as_dtype(bfloat16);
    HostTensor r(full, float32), dr(full, float32), dx(full, float32);
    kernels::unary(UnaryFn::kRelu, x.as_dtype(float32), r);
    kernels::unary(UnaryFn::kReluGrad, x.as_dtype(float32), dr);
    kernels::binary(BinaryFn::kMul, dr, g.as_dtype(float32), dx);

    ExprBuilder eb;
    const int ix = eb.input(0), ig = eb.input(1);
    const int ir = eb.unary(UnaryFn::kRelu, ix);
    eb.e.instrs[ir].round_bfloat16 = true;
    const int idx = eb.binary(BinaryFn::kMul, eb.unary(UnaryFn::kReluGrad, ix), ig);
    eb.e.instrs[idx].round_bfloat16 = true;
    eb.e.outputs = {ir, idx};
    HostTensor got_r(full, bfloat16), got_dx(full, bfloat16);
    kernels::fused_elementwise(eb.e, {&x, &g}, {&got_r, &got_dx});
    EXPECT_TRUE(same_bits(got_r, r.as_dtype(bfloat16)));
    EXPECT_TRUE(same_bits(got_dx, dx.as_dtype(bfloat16)));
  }
}

// exp((x - m) * s) + gelu(x) / t and its square, with m broadcast over the
// inner dimension, s over the outer ones, t a scalar and y transposed
// ([d, r] against the [r, d] output: a strided read).
TEST(FusedKernelTest, GivesTheBitsOfTheKernelsRunOneByOne) {
  std::mt19937 rng(7);
  for (int64_t d : {1, 7, 128, 700}) {  // rows shorter and longer than a block
    SCOPED_TRACE(d);
    const Shape full({{"r", 5}, {"d", d}});
    const HostTensor x = random_tensor(full, rng);
    const HostTensor m = random_tensor(Shape({{"r", 5}}), rng);
    const HostTensor s = random_tensor(Shape({{"d", d}}), rng);
    const HostTensor t = random_tensor(Shape(std::vector<Dimension>{}), rng);
    const HostTensor y = random_tensor(Shape({{"d", d}, {"r", 5}}), rng);

    HostTensor a(full, float32), b(full, float32), e(full, float32), g(full, float32),
        q(full, float32), want1(full, float32), want2(full, float32), w(full, float32);
    kernels::binary(BinaryFn::kSub, x, m, a);
    kernels::binary(BinaryFn::kMul, a, s, b);
    kernels::unary(UnaryFn::kExp, b, e);
    kernels::unary(UnaryFn::kGelu, x, g);
    kernels::binary(BinaryFn::kDiv, g, t, q);
    kernels::binary(BinaryFn::kAdd, e, q, w);
    kernels::binary(BinaryFn::kMul, w, y, want1);
    kernels::unary(UnaryFn::kSquare, want1, want2);

    ExprBuilder eb;
    const int ix = eb.input(0), im = eb.input(1), is = eb.input(2), it = eb.input(3),
              iy = eb.input(4);
    const int ia = eb.binary(BinaryFn::kSub, ix, im);
    const int ie = eb.unary(UnaryFn::kExp, eb.binary(BinaryFn::kMul, ia, is));
    const int iq = eb.binary(BinaryFn::kDiv, eb.unary(UnaryFn::kGelu, ix), it);
    const int i1 = eb.binary(BinaryFn::kMul, eb.binary(BinaryFn::kAdd, ie, iq), iy);
    const int i2 = eb.unary(UnaryFn::kSquare, i1);
    eb.e.outputs = {ia, i1, i2};
    HostTensor got_a(full, float32), got1(full, float32), got2(full, float32);
    kernels::fused_elementwise(eb.e, {&x, &m, &s, &t, &y}, {&got_a, &got1, &got2});
    EXPECT_TRUE(same_bits(got_a, a));
    EXPECT_TRUE(same_bits(got1, want1));
    EXPECT_TRUE(same_bits(got2, want2));
    EXPECT_EQ(eb.e.describe(), "subtract, multiply, exp, gelu, divide, add, multiply, square");
  }
}

// relu(x + bias) * m with the bias over the short inner axis (a
// convolution's channels) and m one value per row: the kernel merges the
// rows into long ones, reading the bias as a repeated row and m expanded.
// The bits of the kernels run one by one, for inner axes that do and do not
// divide a block, merged rows that cross blocks, a bias that changes along
// an outer axis, and a bfloat16 bias.
TEST(FusedKernelTest, ShortRowsWithABiasOverTheInnerAxisKeepTheirBits) {
  std::mt19937 rng(11);
  for (int64_t d : {1, 7, 16, 100}) {
    for (bool bias16 : {false, true}) {
      SCOPED_TRACE(std::to_string(d) + (bias16 ? " bfloat16 bias" : ""));
      const Shape full({{"a", 3}, {"r", 150}, {"d", d}});
      const HostTensor x = random_tensor(full, rng);
      HostTensor bias = random_tensor(Shape({{"a", 3}, {"d", d}}), rng);
      if (bias16) bias = bias.as_dtype(bfloat16);
      const HostTensor m = random_tensor(Shape({{"a", 3}, {"r", 150}}), rng);
      HostTensor sum(full, float32), r(full, float32), want(full, float32);
      kernels::binary(BinaryFn::kAdd, x, bias16 ? bias.as_dtype(float32) : bias, sum);
      kernels::unary(UnaryFn::kRelu, sum, r);
      kernels::binary(BinaryFn::kMul, r, m, want);

      ExprBuilder eb;
      const int ir = eb.unary(UnaryFn::kRelu, eb.binary(BinaryFn::kAdd, eb.input(0), eb.input(1)));
      eb.e.outputs = {eb.binary(BinaryFn::kMul, ir, eb.input(2))};
      HostTensor got(full, float32);
      kernels::fused_elementwise(eb.e, {&x, &bias, &m}, {&got});
      EXPECT_TRUE(same_bits(got, want));
    }
  }
}

TEST(FusedKernelTest, ScalarsOnlyAndAnOutputInItsInputsBuffer) {
  std::mt19937 rng(3);
  const HostTensor p = random_tensor(Shape(std::vector<Dimension>{}), rng);
  ExprBuilder eb;
  eb.e.outputs = {eb.unary(UnaryFn::kTanh, eb.binary(BinaryFn::kMul, eb.input(0), eb.input(0)))};
  HostTensor out(p.shape(), float32);
  kernels::fused_elementwise(eb.e, {&p}, {&out});
  EXPECT_EQ(out.data<float>()[0], std::tanh(p.data<float>()[0] * p.data<float>()[0]));

  // out = relu(x) * bias, written over x itself.
  const Shape full({{"r", 3}, {"d", 1000}});
  HostTensor x = random_tensor(full, rng);
  const HostTensor bias = random_tensor(Shape({{"d", 1000}}), rng);
  HostTensor r(full, float32), want(full, float32);
  kernels::unary(UnaryFn::kRelu, x, r);
  kernels::binary(BinaryFn::kMul, r, bias, want);
  ExprBuilder e2;
  e2.e.outputs = {e2.binary(BinaryFn::kMul, e2.unary(UnaryFn::kRelu, e2.input(0)), e2.input(1))};
  kernels::fused_elementwise(e2.e, {&x, &bias}, {&x});
  EXPECT_TRUE(same_bits(x, want));
}

// A reduction epilogue sums exactly as reduce() sums the values the chain
// would have written (fast and fixed order, sum, max and min), whether the
// space is cut into one piece or many, over inner, middle and outer-kept
// axes, with the kept axes in another order, and with an elementwise output
// beside it.
TEST(FusedKernelTest, ReductionEpilogueHasReducesBits) {
  std::mt19937 rng(4);
  struct Case {
    std::string space, out;
  };
  const std::vector<Case> cases = {
      {"a:3;b:5;c:700", "a:3;b:5"},   // rows of 700, one piece
      {"a:40;b:3;c:1000", "a:40"},    // several rows per output, many pieces
      {"a:9;b:4096;c:6", "c:6;a:9"},  // a middle axis, kept axes reordered
      {"a:200;b:33", "a:200;b:33"},   // nothing reduced
      {"a:70000;b:1", "a:70000"},     // rows of one element, many pieces
      {"a:2;b:20000", "a:2"}};        // a row larger than a piece
  for (const Case& c : cases) {
    SCOPED_TRACE(c.space + " -> " + c.out);
    const Shape space(c.space), out(c.out);
    const Shape bias_shape({space[space.ndims() - 1]});
    const HostTensor x = random_tensor(space, rng), bias = random_tensor(bias_shape, rng);
    HostTensor y(space, float32);  // y = exp(x * bias), reduced
    HostTensor xb(space, float32);
    kernels::binary(BinaryFn::kMul, x, bias, xb);
    kernels::unary(UnaryFn::kExp, xb, y);
    ExprBuilder eb;
    const int xb_i = eb.binary(BinaryFn::kMul, eb.input(0), eb.input(1));
    eb.e.outputs = {xb_i};  // x * bias is also an output
    eb.e.reduce_of = eb.unary(UnaryFn::kExp, xb_i);
    eb.e.reduce_space = space;
    for (kernels::ReduceFn fn :
         {kernels::ReduceFn::kSum, kernels::ReduceFn::kMax, kernels::ReduceFn::kMin}) {
      for (bool fixed : {false, true}) {
        SCOPED_TRACE(std::string(kernels::reduce_name(fn)) + (fixed ? " fixed order" : ""));
        HostTensor want(out, float32), got(out, float32), got_xb(space, float32);
        kernels::reduce(fn, y, want, fixed);
        eb.e.reduce_fn = fn;
        kernels::fused_elementwise(eb.e, {&x, &bias}, {&got_xb, &got}, fixed);
        EXPECT_TRUE(same_bits(got, want));
        EXPECT_TRUE(same_bits(got_xb, xb));
      }
    }
  }
}

Program lowered(const Graph& g, const std::vector<Tensor>& fetches) {
  return lower(g, fetches, {}, MeshShape(""), LayoutRules(""));
}

int count_kind(const Program& p, const std::string& type) {
  int n = 0;
  for (const Step& s : p.steps) n += step_op_type(s) == type;
  return n;
}

TEST(FusionPassTest, GroupsAChainAndKeepsValuesReadLater) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:4;d:8"), float32, "x");
  Tensor bias = placeholder(mesh, Shape("d:8"), float32, "bias");
  Tensor h = relu(x * 2.f + bias);  // constant, multiply, add, relu
  Tensor y = square(h) - h;         // square, subtract: h read inside only
  Tensor z = reduce_sum(exp(y), Shape("b:4"));
  Program p = lowered(g, {z, h});
  const int steps_before = static_cast<int>(p.steps.size());
  const FusionStats stats = fuse_elementwise(p);
  EXPECT_EQ(stats.fused_steps, 1);
  // multiply, add, relu, square, subtract, exp and the sum -> one
  EXPECT_EQ(stats.removed_steps, 6);
  EXPECT_EQ(static_cast<int>(p.steps.size()), steps_before - 6);
  ASSERT_EQ(count_kind(p, "fused"), 1);
  for (const Step& s : p.steps) {
    if (step_op_type(s) != "fused") continue;
    EXPECT_EQ(s.fusion.expr->describe(), "multiply, add, relu, square, subtract, exp, reduce_sum");
    // h (fetched) and the sum: exp(y) is read by the epilogue only.
    ASSERT_EQ(s.output_slots.size(), 2u);
    EXPECT_EQ(s.output_layouts[0].slice_shape(), Shape("b:4;d:8"));
    EXPECT_EQ(s.output_layouts[1].slice_shape(), Shape("b:4"));
  }

  std::mt19937 rng(1);
  const HostTensor xv = random_tensor(x.shape(), rng), bv = random_tensor(bias.shape(), rng);
  MeshConfig off;
  off.fuse = false;
  Session fused(g), unfused(g, off);
  auto a = fused.run({z, h}, {{x, xv}, {bias, bv}});
  auto b = unfused.run({z, h}, {{x, xv}, {bias, bv}});
  EXPECT_TRUE(same_bits(a[0], b[0]));
  EXPECT_TRUE(same_bits(a[1], b[1]));
}

TEST(FusionPassTest, NeverMovesAValuePastAReaderOutsideTheGroup) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:4;d:8"), float32, "x");
  Tensor a = x * x;
  // Reads a before c is computed, and sums over a's first axis, so it cannot
  // end a's group as an epilogue.
  Tensor s = reduce_sum(a, Shape("d:8"));
  Tensor c = a + s;  // [b, d]: would fuse with a, but s needs a first
  Program p = lowered(g, {c});
  fuse_elementwise(p);
  EXPECT_EQ(count_kind(p, "fused"), 0);
  std::mt19937 rng(2);
  const HostTensor xv = random_tensor(x.shape(), rng);
  MeshConfig off;
  off.fuse = false;
  Session fused(g), unfused(g, off);
  EXPECT_TRUE(same_bits(fused.run(c, {{x, xv}}), unfused.run(c, {{x, xv}})));
}

TEST(FusionPassTest, ChainsOfDifferentShapesAndIntegersStayApart) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:4;d:8"), float32, "x");
  // [b, d]: square and its sum; [b]: add, rsqrt
  Tensor r = rsqrt(reduce_sum(square(x), Shape("b:4")) + 1.f);
  Tensor y = x * r;  // [b, d]: not with [b]
  Tensor k = placeholder(mesh, Shape("b:4"), int32, "k");
  Tensor kk = k * k + k;  // int32: never fused
  Program p = lowered(g, {y, kk});
  fuse_elementwise(p);
  for (const Step& s : p.steps) {
    if (!s.fusion.expr) continue;
    for (const Operation* op : s.fusion.ops) EXPECT_EQ(op->output(0).dtype(), float32);
    const Shape shape = s.output_layouts[0].slice_shape();
    const size_t elementwise = s.output_layouts.size() - (s.fusion.expr->reduce_of >= 0 ? 1 : 0);
    for (size_t k = 0; k < elementwise; ++k) EXPECT_EQ(s.output_layouts[k].slice_shape(), shape);
  }
  EXPECT_EQ(count_kind(p, "fused"), 2);  // square + reduce_sum, add + rsqrt
}

// A fused step's output takes over an input that dies there, unless another
// tensor still shares that input's buffer.
TEST(FusionPassTest, OutputsTakeOverDyingInputsThatNothingElseShares) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:4;d:8"), float32, "x");
  Tensor y = exp(x + 1.f) * 3.f;
  Program p = lowered(g, {y});
  fuse_elementwise(p);
  const Step* fused = nullptr;
  for (const Step& s : p.steps)
    if (s.fusion.expr) fused = &s;
  ASSERT_NE(fused, nullptr);
  ASSERT_EQ(fused->fusion.donors.size(), 1u);
  ASSERT_GE(fused->fusion.donors[0], 0);
  const int donor_slot = fused->input_slots[fused->fusion.donors[0]];
  EXPECT_EQ(p.slot_layouts[donor_slot].shape(), x.shape());

  std::mt19937 rng(5);
  std::vector<HostTensor> slots(p.num_slots);
  for (size_t k = 0; k < fused->input_slots.size(); ++k) {
    const int slot = fused->input_slots[k];
    slots[slot] = random_tensor(p.slot_layouts[slot].slice_shape(), rng);
  }
  RunState state;
  HostTensor kept = slots[donor_slot];  // shared: must not be overwritten
  std::vector<HostTensor> shared = exec::compute(*fused, 0, slots, state);
  EXPECT_NE(shared[0].raw_data(), slots[donor_slot].raw_data());
  kept = HostTensor();
  const void* donor_data = slots[donor_slot].raw_data();
  std::vector<HostTensor> taken = exec::compute(*fused, 0, slots, state);
  EXPECT_EQ(taken[0].raw_data(), donor_data);
}

// Training is bit-identical with and without fusion, on one processor and on
// meshes (reproducible mode there: sums whole, fixed-order einsums).
// In float32, and with bfloat16 activations (the fused kernel widens a block
// at a time and rounds each op's values as the op's own kernel would).
void expect_same_bits_fused_or_not(DType activation) {
  auto train = [activation](MeshConfig mc) {
    models::TransformerConfig c = testing::tiny_transformer_config();
    c.variable_dtype = VariableDType(float32, float32, activation);
    models::TransformerLm lm(c);
    Session s(lm.graph(), mc);
    HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
    std::vector<HostTensor> out;
    for (int step = 0; step < 3; ++step) {
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        in.data<int32_t>()[i] = static_cast<int32_t>((i * 5 + step) % 64);
        tg.data<int32_t>()[i] = static_cast<int32_t>((i * 5 + step + 1) % 64);
      }
      out.push_back(s.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops)[0]);
    }
    for (const Tensor& v : lm.graph().trainable_variables())
      out.push_back(s.variable_value(v.op().name()));
    return out;
  };
  const struct {
    const char* mesh;
    const char* layout;
    bool reproducible;
  } cases[] = {
      {"", "", false},
      {"", "", true},
      {"rows:2;cols:2", "batch:rows;heads:cols;d_ff:cols", true},
  };
  std::vector<HostTensor> one;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.mesh) + " " + c.layout);
    MeshConfig mc;
    mc.mesh_shape = MeshShape(c.mesh);
    mc.layout = LayoutRules(c.layout);
    mc.reproducible = c.reproducible;
    mc.fuse = true;
    const std::vector<HostTensor> fused = train(mc);
    mc.fuse = false;
    const std::vector<HostTensor> unfused = train(mc);
    ASSERT_EQ(fused.size(), unfused.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(same_bits(fused[i], unfused[i])) << i;
    if (c.reproducible && one.empty()) one = fused;
    if (c.reproducible && *c.mesh) {
      for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(same_bits(fused[i], one[i])) << i;
    }
  }
}

TEST(FusionPassTest, TransformerTrainingHasTheSameBitsFusedOrNot) {
  expect_same_bits_fused_or_not(float32);
}

TEST(FusionPassTest, BFloat16TransformerTrainingHasTheSameBitsFusedOrNot) {
  expect_same_bits_fused_or_not(bfloat16);
}

}  // namespace
}  // namespace mtf

namespace mtf {
namespace {

// SGD's update by a weight gradient's contraction runs as one step (fast
// mode): the same training within float rounding, the relu output the
// contraction reads still intact when it runs (an elementwise output must
// not have taken its buffer), and never in reproducible mode.
TEST(FusionPassTest, SgdUpdatesAddTheContractionStraightIntoTheWeight) {
  auto train = [](bool fuse, bool reproducible, std::string* program) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, Shape("batch:32;pixels:50"), float32, "x");
    Tensor y = placeholder(mesh, Shape("batch:32"), int32, "y");
    Tensor w1 = get_variable(mesh, "w1", Shape("pixels:50;hidden:64"));
    Tensor w2 = get_variable(mesh, "w2", Shape("hidden:64;classes:10"));
    Tensor h = relu(einsum({x, w1}, Shape("batch:32;hidden:64")));
    Tensor logits = einsum({h, w2}, Shape("batch:32;classes:10"));
    const Dimension classes = logits.shape().get("classes");
    Tensor loss =
        reduce_mean(softmax_cross_entropy_with_logits(logits, one_hot(y, classes), classes));
    auto train_ops = SgdOptimizer(0.5f).minimize(loss);
    MeshConfig mc;
    mc.fuse = fuse;
    mc.reproducible = reproducible;
    Session s(g, mc);
    std::mt19937 rng(4);
    HostTensor xv = random_tensor(x.shape(), rng), yv(y.shape(), int32);
    for (int64_t i = 0; i < 32; ++i) yv.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
    std::vector<float> losses;
    for (int step = 0; step < 5; ++step)
      losses.push_back(s.run({loss}, {{x, xv}, {y, yv}}, train_ops)[0].data<float>()[0]);
    *program = s.program_text({loss}, train_ops);
    std::vector<float> out = s.variable_value("w1").to_floats();
    for (float l : losses) out.push_back(l);
    return out;
  };
  std::string fused_text, plain_text, repro_text;
  const std::vector<float> fused = train(true, false, &fused_text);
  const std::vector<float> plain = train(false, false, &plain_text);
  EXPECT_NE(fused_text.find("einsum+assign_sub"), std::string::npos) << fused_text;
  EXPECT_EQ(plain_text.find("einsum+assign_sub"), std::string::npos);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i)
    ASSERT_NEAR(fused[i], plain[i], 1e-5f * std::max(1.f, std::fabs(plain[i]))) << i;
  EXPECT_LT(fused.back(), fused[fused.size() - 5]);  // it learns
  train(true, true, &repro_text);
  EXPECT_EQ(repro_text.find("einsum+assign_sub"), std::string::npos);
}

}  // namespace
}  // namespace mtf
