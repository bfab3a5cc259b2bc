// User errors: each throws a named error type whose message says which
// tensor, which dimension and what was expected.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_error.h"
#include "mtf/mtf.h"

namespace mtf {
namespace {

using testing::expect_error;

class ErrorsTest : public ::testing::Test {
 protected:
  Graph g;
  Mesh mesh{g, "mesh"};
};

TEST_F(ErrorsTest, UnknownDimensionName) {
  Tensor x = zeros(mesh, Shape("batch:4;hidden:8"));
  expect_error<ShapeError>(
      [&] {
        reduce_sum(x, Dimension{"heads", 8});
      },
      {"unknown dimension \"heads\"", "batch:4", "zeros"});
  expect_error<ShapeError>([&] { slice(x, 0, 1, "rows"); }, {"slice", "\"rows\"", "zeros:0"});
  expect_error<ShapeError>([&] { rename_dimension(x, "nope", "b"); }, {"\"nope\""});
}

TEST_F(ErrorsTest, OneNameWithTwoSizes) {
  Tensor a = zeros(mesh, Shape("batch:4;hidden:8"));
  Tensor b = ones(mesh, Shape("batch:5"));
  expect_error<ShapeError>([&] { (void)(a + b); },
                           {"dimension \"batch\"", "size 4", "size 5", "zeros:0", "ones:0"});
  expect_error<ShapeError>([&] { einsum({a, b}, Shape("hidden:8")); }, {"\"batch\"", "4", "5"});
}

TEST_F(ErrorsTest, EinsumOutputDimensionFromNowhere) {
  Tensor a = zeros(mesh, Shape("i:2;k:3"));
  Tensor b = zeros(mesh, Shape("k:3;j:4"));
  expect_error<ShapeError>(
      [&] {
        einsum({a, b}, Shape("i:2;x:5"));
      },
      {"einsum", "output dimension \"x\"", "appears in no input", "[i:2, k:3]"});
  expect_error<ShapeError>([&] { einsum({a, b}, Shape("i:3;j:4")); }, {"i:3", "disagrees"});
}

TEST_F(ErrorsTest, ReshapeChangingSize) {
  Tensor a = zeros(mesh, Shape("i:2;k:3"));
  expect_error<ShapeError>([&] { reshape(a, Shape("x:7"), "r"); },
                           {"reshape \"r\"", "6 elements", "[x:7]", "7 elements"});
}

TEST_F(ErrorsTest, MalformedAndDuplicateShapes) {
  expect_error<ShapeError>([&] { zeros(mesh, Shape("x;4")); }, {"malformed shape string \"x;4\""});
  expect_error<ShapeError>([&] { zeros(mesh, Shape("x:4;x:4")); }, {"duplicate dimension \"x\""});
}

TEST_F(ErrorsTest, DtypeMismatch) {
  Tensor f = zeros(mesh, Shape("a:2"));
  Tensor i = zeros(mesh, Shape("a:2"), int32);
  expect_error<DTypeError>([&] { (void)(f + i); }, {"int32", "float32", "cast"});
  expect_error<DTypeError>([&] { one_hot(f, Dimension{"v", 3}); }, {"one_hot", "int32"});
  expect_error<DTypeError>([&] { reduce_mean(i); }, {"reduce_mean", "float32"});
  expect_error<DTypeError>([&] { Session(g).run(log(i)); }, {"log", "int32"});
  // A convolution of bfloat16 input with a float32 filter names both.
  Tensor bf = zeros(mesh, Shape("h:4;w:4;c:1"), bfloat16);
  Tensor filter = zeros(mesh, Shape("kh:2;kw:2;c:1;co:2"));
  expect_error<DTypeError>([&] { conv(bf, filter); }, {"conv", "float32", "bfloat16", "cast one"});
  expect_error<DTypeError>(
      [&] {
        max_pool(zeros(mesh, Shape("h:4;w:4;c:1"), int32), {2, 2});
      },
      {"max_pool", "int32"});
}

TEST_F(ErrorsTest, BadArguments) {
  Tensor x = zeros(mesh, Shape("b:2;v:5"));
  expect_error<ValueError>(
      [&] {
        top_k(x, Dimension{"v", 5}, Dimension{"k", 6});
      },
      {"top_k", "k = 6", "\"v\""});
  expect_error<ValueError>([&] { slice(x, 3, 3, "v"); }, {"begin 3 size 3", "v:5"});
  expect_error<ValueError>([&] { dropout(x, 0.f); }, {"keep_prob 0"});
  expect_error<ValueError>([&] { split(x, Dimension{"v", 5}, {2, 2}); }, {"sum to 4", "size 5"});
  expect_error<ValueError>([&] { assign(x, x); }, {"not a variable"});
}

TEST_F(ErrorsTest, FeedsAreChecked) {
  Tensor p = placeholder(mesh, Shape("a:2"), float32, "images");
  Session s(g);
  expect_error<ValueError>([&] { s.run(p * 2.f); }, {"\"images:0\"", "not fed"});
  expect_error<ValueError>(
      [&] {
        s.run(p * 2.f, {{p, HostTensor::zeros(Shape("a:3"), float32)}});
      },
      {"\"images:0\"", "[a:3]", "exactly its shape"});
  // Another graph's placeholder (the same id, name and shape) is not this one.
  Graph other;
  Mesh other_mesh(other, "mesh");
  const Tensor stranger = placeholder(other_mesh, Shape("a:2"), float32, "images");
  ASSERT_EQ(stranger.id(), p.id());
  expect_error<ValueError>(
      [&] {
        s.run(p * 2.f, {{stranger, HostTensor::zeros(Shape("a:2"), float32)}});
      },
      {"\"images:0\"", "another graph"});
}

// check_numerics stops the run at the op that made the NaN, naming it and
// the element, and no variable changes; without it the NaN reaches the
// weights.
TEST_F(ErrorsTest, CheckNumericsStopsAtTheOpThatMadeANaN) {
  const Tensor x = placeholder(mesh, Shape("a:4"), float32, "x");
  const Tensor w = get_variable(mesh, "w", Shape("a:4"), Initializer::ones());
  const Tensor root = sqrt(x - 2.0f);  // NaN where x < 2
  const Tensor loss = reduce_sum(root * w);
  const std::vector<Operation*> train = SgdOptimizer(0.1f).minimize(loss);
  const HostTensor bad = HostTensor::from_floats(Shape("a:4"), {3, 4, 1, 5});
  for (const char* layout : {"", "a:x"}) {
    SCOPED_TRACE(layout);
    MeshConfig checked;
    checked.mesh_shape = MeshShape(*layout ? "x:2" : "");
    checked.layout = LayoutRules(layout);
    checked.check_numerics = true;
    Session s(g, checked);
    const std::vector<float> before = s.variable_value("w").to_floats();
    expect_error<NumericsError>(
        [&] {
          s.run({loss}, {{x, bad}}, train);
        },
        {"check_numerics", "sqrt", "NaN at [a ", "no variable was changed"});
    EXPECT_EQ(s.variable_value("w").to_floats(), before);
    // Finite values run as without the check.
    s.run({loss}, {{x, HostTensor::from_floats(Shape("a:4"), {3, 4, 6, 5})}}, train);
    EXPECT_NE(s.variable_value("w").to_floats(), before);
  }
  Session unchecked(g);
  unchecked.run({loss}, {{x, bad}}, train);
  EXPECT_TRUE(std::isnan(unchecked.variable_value("w").to_floats()[2]));
}

TEST_F(ErrorsTest, VariablesNeedUniqueNames) {
  get_variable(mesh, "w", Shape("a:2"));
  expect_error<ValueError>([&] { get_variable(mesh, "w", Shape("a:2")); }, {"\"w\"", "unique"});
  Session s(g);
  expect_error<ValueError>([&] { s.variable_value("nope"); }, {"no variable named \"nope\""});
  expect_error<ValueError>(
      [&] { s.set_variable_value("w", HostTensor::zeros(Shape("a:3"), float32)); },
      {"\"w:0\"", "[a:3]"});
}

TEST_F(ErrorsTest, RuntimeErrorsNameTheOp) {
  Tensor a = constant(mesh, 7.f, Shape("a:2"), int32);
  Tensor b = constant(mesh, 0.f, Shape("a:2"), int32);
  Tensor q = divide(a, b);
  expect_error<ValueError>([&] { Session(g).run(q); },
                           {"while running op \"divide\" (divide)", "integer division by zero"});
  // Nothing was committed by the failed run: variables keep their values.
  Tensor v = get_variable(mesh, "v", Shape("a:2"), Initializer::constant(1.f), int32);
  Session s(g);
  EXPECT_THROW(s.run({}, {}, {assign(v, q)}), ValueError);
  EXPECT_EQ(s.variable_value("v").to_ints(), (std::vector<int32_t>{1, 1}));
}

TEST_F(ErrorsTest, HugeShapesAreErrorsNotCrashes) {
  expect_error<ShapeError>([&] { Shape("a:4294967296;b:4294967296"); }, {"2^62"});
  Tensor big = zeros(mesh, Shape("a:1000000;b:1000000"));  // 4 TB
  expect_error<OutOfMemoryError>(
      [&] { Session(g).run(big); },
      {"while running op \"zeros\"", "cannot allocate", "[a:1000000, b:1000000]"});
}

TEST_F(ErrorsTest, InvalidTensorHandles) {
  Tensor none;
  Tensor x = zeros(mesh, Shape("a:2"));
  expect_error<ValueError>([&] { (void)(x + none); }, {"invalid"});
  expect_error<ValueError>([&] { none.shape(); }, {"invalid"});
}

}  // namespace
}  // namespace mtf

namespace mtf {
namespace {

// Layout errors: Session::check finds them before anything runs, and each
// names the op and, for an op the user did not make, the call that did.
class LayoutErrorsTest : public ErrorsTest {
 protected:
  MeshConfig on(const char* mesh_shape, const char* layout) {
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    return mc;
  }
};

TEST_F(LayoutErrorsTest, CheckNamesTheUsersOpBeforeAnyRun) {
  Tensor x = placeholder(mesh, Shape("v:8"), float32, "x");
  Tensor y = slice(x, 0, 6, "v");  // 6 over 8 processors
  Session s(g, on("r:8", "v:r"));
  expect_error<LayoutError>([&] { s.check({y}); },
                            {"op \"slice\" (slice)", "\"slice:0\"", "size 6", "\"r\" of size 8"});
  EXPECT_EQ(s.run_counter(), 0u);
}

TEST_F(LayoutErrorsTest, InternalOpsNameTheCallThatMadeThem) {
  Tensor x = placeholder(mesh, Shape("a:2;v:8"), float32, "x");
  std::vector<Tensor> parts = split(x, "v", {2, 6});  // pieces of 2 and 6 over 4 processors
  Session s(g, on("r:4", "v:r"));
  expect_error<LayoutError>([&] { s.check({parts[0]}); },
                            {"(slice), made by split on \"x:0\"", "size 2"});
}

TEST_F(LayoutErrorsTest, OriginsKeepTheOutermostCallAndCoverGradients) {
  Tensor x = placeholder(mesh, Shape("a:2;v:8"), float32, "x");
  Tensor y = layers::layer_norm(x, "v", "ln");
  Tensor loss = reduce_sum(softmax(y, "v"));
  const std::string ln = "layers::layer_norm \"ln\" on \"x:0\"";
  EXPECT_EQ(y.op().origin(), ln);
  // layer_norm's reduce_mean (itself a composition) is attributed to layer_norm.
  int inside_ln = 0;
  for (const auto& op : g.operations()) inside_ln += op->origin() == ln;
  EXPECT_GE(inside_ln, 4);
  EXPECT_EQ(loss.op().origin(), "");  // the user's own reduce_sum
  EXPECT_EQ(loss.op().inputs()[0].op().origin(), "softmax on \"" + y.name() + "\"");
  const size_t before = g.operations().size();
  gradients({loss}, {x});
  bool saw_softmax_gradient = false, saw_ln_gradient = false;
  for (size_t i = before; i < g.operations().size(); ++i) {
    const std::string& o = g.operations()[i]->origin();
    EXPECT_EQ(o.rfind("the gradient of ", 0), 0u) << g.operations()[i]->to_string() << " | " << o;
    saw_softmax_gradient = saw_softmax_gradient || o.find("softmax on") != std::string::npos;
    saw_ln_gradient = saw_ln_gradient || o.find(ln) != std::string::npos;
  }
  EXPECT_TRUE(saw_softmax_gradient);
  EXPECT_TRUE(saw_ln_gradient);
}

TEST_F(LayoutErrorsTest, TheSessionChecksVariablesWhenItIsMade) {
  get_variable(mesh, "w", Shape("v:12;h:4"));
  expect_error<LayoutError>([&] { Session(g, on("r:8", "v:r")); }, {"\"w:0\"", "size 12"});
  MeshConfig sim = on("r:8", "v:r");
  sim.impl = MeshImpl::kSimulated;
  sim.sim->topology = Topology::preset("tpu-v2-8");
  sim.sim->mode = SimMode::kCostOnly;
  expect_error<LayoutError>([&] { Session(g, sim); }, {"\"w:0\"", "size 12"});
}

}  // namespace
}  // namespace mtf
