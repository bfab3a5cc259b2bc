// stack and unstack (and reshape's splittability): values against loops, gradients against finite
// differences, and the one-processor bits under layouts that split the
// stacked or unstacked dimension (stack slices locally, unstack gathers)
// or other dimensions, on both mesh implementations.
#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::eval;
using testing::mesh_config;
using testing::random_tensor;

TEST(StackTest, StackAndUnstackMatchLoops) {
  const Shape shape("a:3;b:4");
  std::vector<HostTensor> xs;
  for (int i = 0; i < 4; ++i) xs.push_back(random_tensor(shape, 10 + i));
  Graph g;
  Mesh mesh(g, "m");
  std::vector<Tensor> ts;
  for (const HostTensor& x : xs) ts.push_back(import_host(mesh, x));
  const Tensor st = stack(ts, "s", 1);  // [a, s, b]
  ASSERT_EQ(st.shape(), Shape("a:3;s:4;b:4"));
  std::vector<float> want;
  for (int64_t a = 0; a < 3; ++a)
    for (int s = 0; s < 4; ++s)
      for (int64_t b = 0; b < 4; ++b) want.push_back(xs[s].to_floats()[a * 4 + b]);
  EXPECT_EQ(eval(st), want);
  const std::vector<Tensor> parts = unstack(st, st.shape().get("s"));
  ASSERT_EQ(parts.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    ASSERT_EQ(parts[s].shape(), shape);
    EXPECT_EQ(eval(parts[s]), xs[s].to_floats()) << "part " << s;
  }
}

TEST(StackTest, GradientsMatchFiniteDifferences) {
  using V = std::vector<Tensor>;
  const Shape s("a:3;b:2");
  check_gradients({s, s, s}, [](const V& x) { return stack({x[0], x[1], x[2]}, "n", 2) * 1.5f; });
  // Outputs of unstack left unused get zero gradient.
  check_gradients({Shape("a:3;n:4")}, [](const V& x) {
    const V u = unstack(x[0], Dimension{"n", 4});
    return u[0] * u[3] + u[1];
  });
}

TEST(StackTest, EveryLayoutGivesTheOneProcessorBits) {
  const Shape shape("a:4;n:8;b:6");
  const HostTensor xv = random_tensor(shape, 3);
  auto run = [&](const char* mesh_shape, const char* layout, MeshImpl impl) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, shape, float32, "x");
    // Unstack the split n, stack the pieces under a new name the layout
    // splits too, and in reverse order under n again.
    std::vector<Tensor> parts = unstack(x, x.shape().get("n"));
    Tensor fwd = stack(parts, "m", 0);
    std::reverse(parts.begin(), parts.end());
    Tensor back = stack(parts, "n", 1);
    Tensor y = x * back + reduce_sum(fwd * fwd, fwd.shape().get("m"));
    Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
    const MeshConfig mc = testing::mesh_config(mesh_shape, layout, impl);
    Session s(g, mc);
    return s.run({fwd, y, dx}, {{x, xv}});
  };
  const std::vector<HostTensor> one = run("", "", MeshImpl::kSimd);
  for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    for (const auto& [m, l] :
         std::vector<std::pair<const char*, const char*>>{{"r:2", "n:r"},
                                                          {"r:4", "m:r"},
                                                          {"r:2;c:2", "n:r;m:c"},
                                                          {"r:2;c:4", "a:r;n:c;m:c"},
                                                          {"r:2;c:2", "b:r;m:c"}}) {
      SCOPED_TRACE(std::string(m) + " " + l + (impl == MeshImpl::kSimd ? " simd" : " placement"));
      const std::vector<HostTensor> got = run(m, l, impl);
      for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(got[i].to_floats(), one[i].to_floats());
    }
  }
}

TEST(StackTest, BadArgumentsAreErrors) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor a = zeros(mesh, Shape("a:2;b:3")), c = zeros(mesh, Shape("a:2;c:3"));
  Tensor i = zeros(mesh, Shape("a:2;b:3"), int32);
  EXPECT_THROW(stack({}, "s", 0), ValueError);
  EXPECT_THROW(stack({a, c}, "s", 0), ShapeError);
  EXPECT_THROW(stack({a, a}, "a", 0), ShapeError);
  EXPECT_THROW(stack({a, a}, "s", 3), ValueError);
  EXPECT_THROW(stack({a, i}, "s", 0), DTypeError);
  EXPECT_THROW(unstack(a, Dimension{"z", 2}), ShapeError);
}

}  // namespace
}  // namespace mtf

namespace mtf {
namespace {

// reshape keeps a split dimension split when it keeps its name and size
// and the dimensions before it hold as many elements (its blocks map onto
// themselves); the others are gathered.
TEST(ReshapeLayoutTest, AlignedDimensionsStaySplit) {
  const HostTensor xv = testing::random_tensor(Shape("a:4;b:6"), 8);
  auto run = [&](const char* mesh_shape, const char* layout, std::string* counters) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, Shape("a:4;b:6"), float32, "x");
    Tensor y = reshape(x * 2.f, Shape("a:4;c:2;d:3"), "the_reshape");
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    Session s(g, mc);
    if (counters) *counters = s.counters_text({y});
    return s.run(y, {{x, xv}}).to_floats();
  };
  const std::vector<float> one = run("", "", nullptr);
  std::string counters;
  EXPECT_EQ(run("r:2", "a:r", &counters), one);
  EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
  EXPECT_EQ(run("r:2", "b:r", &counters), one);  // b becomes c, d: gathered
  EXPECT_NE(counters.find("op the_reshape: allgather"), std::string::npos) << counters;
}

struct ReshapeCase {
  const char* in;      // input shape
  const char* out;     // output shape
  const char* mesh;    // mesh shape
  const char* layout;  // layout rules for both
  bool moves;          // whether the reshape needs communication
};

// A split that keeps its element offset (the dimensions before it hold as
// many elements in the input as in the output) maps each processor's block
// onto its output block whatever the split dimension's name and size, as in
// Mesh TensorFlow's lowering: nothing moves. Forward and backward give the
// one-processor values in every case.
TEST(ReshapeLayoutTest, SplitsAtTheSameOffsetMoveNothing) {
  const ReshapeCase cases[] = {
      // b:6 split in two becomes c:2 split in two (each half of b is one c).
      {"a:4;b:6", "a:4;c:2;d:3", "x:2", "b:x;c:x", false},
      // ... and back: c and d merge into b, the split staying put.
      {"a:4;c:2;d:3", "a:4;b:6", "x:2", "b:x;c:x", false},
      // A leading split dimension renamed and refactored, with a second axis
      // whose split keeps its name.
      {"a:4;b:6", "e:2;f:2;b:6", "x:2;y:2", "a:x;e:x;b:y", false},
      // Splits at offsets that differ: b's halves are not d's.
      {"a:4;b:6", "a:4;c:2;d:3", "x:3", "b:x;d:x", true},
      // A split on the input only.
      {"a:4;b:6", "a:4;c:2;d:3", "x:2", "b:x", true},
  };
  for (const ReshapeCase& c : cases) {
    SCOPED_TRACE(std::string(c.in) + " -> " + c.out + " on " + c.mesh + " " + c.layout);
    Graph g;
    Mesh mesh(g, "m");
    const Shape in(c.in), out(c.out);
    const HostTensor xv = random_tensor(in, 5);
    const Tensor x = placeholder(mesh, in, float32, "x");
    const Tensor w = placeholder(mesh, out, float32, "w");
    const Tensor y = reshape(x, out, "the_reshape");
    const Tensor loss = reduce_sum(square(y) * w);
    const Tensor dx = gradients({loss}, {x})[0];
    const HostTensor wv = random_tensor(out, 6);
    Session one(g);
    const auto want = one.run({y, dx}, {{x, xv}, {w, wv}});
    for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
      Session split(g, mesh_config(c.mesh, c.layout, impl));
      const auto got = split.run({y, dx}, {{x, xv}, {w, wv}});
      EXPECT_EQ(got[0].to_floats(), want[0].to_floats());
      EXPECT_EQ(got[1].to_floats(), want[1].to_floats());
      const std::string counters = split.counters_text({y});
      const bool moved = counters.find("op the_reshape:") != std::string::npos;
      EXPECT_EQ(moved, c.moves) << counters << split.program_text({y});
    }
  }
}

// A reshape that only renames (the same sizes in the same order) moves a
// mesh axis from one position to another by one alltoall, gathers an axis
// the output does not use and splits one it adds.
TEST(ReshapeLayoutTest, RenamingMovesASplitByAlltoall) {
  const HostTensor xv = testing::random_tensor(Shape("a:4;b:8;c:2"), 9);
  auto run = [&](const char* mesh_shape, const char* layout, MeshImpl impl, std::string* counters) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    Tensor y = reshape(x * 2.f, Shape("p:4;q:8;c:2"), "the_reshape");
    Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    mc.impl = impl;
    Session s(g, mc);
    if (counters) *counters = s.counters_text({y});
    const std::vector<HostTensor> r = s.run({y, dx}, {{x, xv}});
    return std::make_pair(r[0].to_floats(), r[1].to_floats());
  };
  const auto one = run("", "", MeshImpl::kSimd, nullptr);
  for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    std::string counters;
    EXPECT_EQ(run("r:4", "a:r;q:r", impl, &counters), one);
    // x's slice is [1, 8, 2] floats: 3 of its 4 blocks of 4 floats leave.
    EXPECT_NE(counters.find("op the_reshape: alltoall/r 48 bytes"), std::string::npos) << counters;
    EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
    EXPECT_EQ(run("r:2;s:2", "a:r;b:s;q:r;p:s", impl, &counters), one);  // both axes swap places
    EXPECT_EQ(run("r:2", "a:r", impl, &counters), one);                  // a gathered
    EXPECT_NE(counters.find("op the_reshape: allgather"), std::string::npos) << counters;
    EXPECT_EQ(run("r:2", "q:r", impl, &counters), one);  // q split, nothing sent
    EXPECT_EQ(counters.find("op the_reshape:"), std::string::npos) << counters;
  }
}

}  // namespace
}  // namespace mtf
