// Shapes, shape strings, graph names: Mesh TensorFlow's conventions.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "mtf/mtf.h"

namespace mtf {
namespace {

TEST(ShapeTest, ParsesEveryMeshTensorFlowSeparator) {
  const Shape want({{"x", 4}, {"y", 8}});
  for (const char* s : {"x:4;y:8", "x:4,y:8", "x:4 y:8", "x:4.y:8", " x:4 ;  y:8 "}) {
    EXPECT_EQ(Shape(s), want) << s;
  }
  EXPECT_EQ(Shape(""), Shape());
  EXPECT_EQ(Shape("b:0").num_elements(), 0);
}

TEST(ShapeTest, BasicQueries) {
  Shape s("batch:2;rows:3;cols:5");
  EXPECT_EQ(s.ndims(), 3);
  EXPECT_EQ(s.num_elements(), 30);
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{15, 5, 1}));
  EXPECT_EQ(s.index_of("rows"), 1);
  EXPECT_EQ(s.index_of("nope"), -1);
  EXPECT_EQ(s.get("cols").size, 5);
  EXPECT_EQ(s.to_string(), "[batch:2, rows:3, cols:5]");
  EXPECT_EQ(s.rename("rows", "r").to_string(), "[batch:2, r:3, cols:5]");
  EXPECT_EQ(s.resize("rows", 7).num_elements(), 70);
  EXPECT_EQ(s.minus(Shape("rows:3")).to_string(), "[batch:2, cols:5]");
  EXPECT_TRUE(Shape("cols:5;batch:2").is_subset_of(s));
  EXPECT_TRUE(Shape("cols:5;rows:3;batch:2").same_dims_as(s));
  EXPECT_EQ(Shape().num_elements(), 1);
}

TEST(ShapeTest, MalformedStringsSayWhatIsWrong) {
  testing::expect_error<ShapeError>([&] { Shape s("x;4"); }, {"\"x;4\"", "piece \"x\""});
  EXPECT_THROW(Shape("x:four"), ShapeError);
  EXPECT_THROW(Shape("x:-1"), ShapeError);
  EXPECT_THROW(Shape("x:4:5"), ShapeError);
  EXPECT_THROW(Shape(":4"), ShapeError);
}

TEST(ShapeTest, DuplicateDimensionIsAnError) {
  testing::expect_error<ShapeError>([&] { Shape s("x:4;x:8"); }, {"duplicate dimension \"x\""});
  EXPECT_THROW(Shape({{"a", 1}, {"a", 1}}), ShapeError);
}

TEST(ShapeTest, UnknownDimensionNamesTheShape) {
  testing::expect_error<ShapeError>([&] { Shape("x:4").get("y"); },
                                    {"unknown dimension \"y\"", "[x:4]"});
}

TEST(GraphTest, UniqueNamesAsMeshTensorFlow) {
  // Case-insensitive, numbered like TensorFlow (ops_test.py's testGraphNames).
  Graph g;
  EXPECT_EQ(g.unique_name("a"), "a");
  EXPECT_EQ(g.unique_name("A"), "A_1");
  EXPECT_EQ(g.unique_name("a"), "a_2");
  EXPECT_EQ(g.unique_name("a_1"), "a_1_1");
  EXPECT_EQ(g.unique_name("b", false), "b");
  EXPECT_EQ(g.unique_name("b"), "b");
}

TEST(GraphTest, OpsGetUniqueNamesAndPrint) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = constant(mesh, 1.f, Shape("a:2"), float32, "c");
  Tensor y = constant(mesh, 2.f, Shape("a:2"), float32, "c");
  EXPECT_EQ(x.op().name(), "c");
  EXPECT_EQ(y.op().name(), "c_1");
  EXPECT_EQ(y.name(), "c_1:0");
  Tensor z = x + y;
  EXPECT_EQ(z.op().type(), "add");
  EXPECT_NE(g.to_string().find("add = add(c:0, c_1:0) -> [a:2] float32"), std::string::npos)
      << g.to_string();
  EXPECT_EQ(g.find_operation("c_1"), &y.op());
}

TEST(GraphTest, TensorsOfAnotherMeshCannotMix) {
  Graph g;
  Mesh m1(g, "m1"), m2(g, "m2");
  Tensor a = constant(m1, 1.f, Shape("x:2"));
  Tensor b = constant(m2, 1.f, Shape("x:2"));
  testing::expect_error<ValueError>([&] { (void)(a + b); }, {"mesh \"m2\""});
}

TEST(HostTensorTest, TypedAccessChecksDtype) {
  HostTensor t = HostTensor::from_ints(Shape("a:3"), {1, 2, 3});
  EXPECT_EQ(t.to_floats(), (std::vector<float>{1, 2, 3}));
  EXPECT_THROW(t.data<float>(), DTypeError);
  EXPECT_THROW(HostTensor::from_floats(Shape("a:3"), {1.f}), ValueError);
  HostTensor c = t.clone();
  c.data<int32_t>()[0] = 9;
  EXPECT_EQ(t.data<int32_t>()[0], 1);
}

}  // namespace
}  // namespace mtf
