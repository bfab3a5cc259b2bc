// Meshes, layout rules and tensor layouts: parsing, slices, and every
// validation error with its message.
#include <gtest/gtest.h>

#include "mtf/mtf.h"

namespace mtf {
namespace {

template <typename F>
std::string layout_error(F f) {
  try {
    f();
  } catch (const LayoutError& e) {
    return e.what();
  }
  return "(no LayoutError)";
}

void expect_contains(const std::string& msg, const std::vector<std::string>& needles) {
  for (const auto& n : needles)
    EXPECT_NE(msg.find(n), std::string::npos) << "\"" << msg << "\" lacks \"" << n << "\"";
}

TEST(MeshShapeTest, ParsesAndNumbersRowMajor) {
  for (const char* s : {"rows:2;cols:4", "rows:2,cols:4", "rows:2 cols:4", "rows:2.cols:4"})
    EXPECT_EQ(MeshShape(s), MeshShape(Shape("rows:2;cols:4"))) << s;
  MeshShape m("rows:2;cols:4");
  EXPECT_EQ(m.size(), 8);
  EXPECT_EQ(m.to_string(), "rows:2;cols:4");
  // Row-major: the last mesh dimension varies fastest.
  EXPECT_EQ(m.coordinates(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(m.coordinates(5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.coordinates(3), (std::vector<int64_t>{0, 3}));
  for (int64_t p = 0; p < m.size(); ++p) EXPECT_EQ(m.pnum(m.coordinates(p)), p);
  EXPECT_EQ(MeshShape().size(), 1);
}

TEST(MeshShapeTest, BadMeshes) {
  expect_contains(layout_error([] { MeshShape("rows:0"); }), {"\"rows\"", "size 0"});
  expect_contains(layout_error([] { MeshShape("rows;2"); }), {"malformed mesh shape string"});
  expect_contains(layout_error([] { MeshShape("rows:x"); }), {"\"x\"", "not an integer"});
  expect_contains(layout_error([] { MeshShape("a:2;a:2"); }), {"duplicate dimension \"a\""});
}

TEST(LayoutRulesTest, ParsesMeshTensorFlowStrings) {
  LayoutRules r("batch:rows;hidden:cols");
  ASSERT_EQ(r.pairs().size(), 2u);
  EXPECT_EQ(r.pairs()[1], (std::pair<std::string, std::string>{"hidden", "cols"}));
  EXPECT_EQ(r.to_string(), "batch:rows;hidden:cols");
  EXPECT_EQ(LayoutRules("batch:rows,hidden:cols"), r);
  MeshShape m("rows:2;cols:4");
  EXPECT_EQ(r.mesh_axis_for("hidden", m), 1);
  EXPECT_FALSE(r.mesh_axis_for("classes", m).has_value());
  EXPECT_EQ(LayoutRules("d_ff:model;heads:model").tensor_dims_on("model"),
            (std::vector<std::string>{"d_ff", "heads"}));
}

TEST(TensorLayoutTest, SliceShapesAndOffsets) {
  MeshShape m("rows:2;cols:4");
  TensorLayout l = TensorLayout::make(Shape("batch:100;rows_px:28;hidden:1024"),
                                      LayoutRules("batch:rows;hidden:cols"), m, "x");
  EXPECT_EQ(l.tensor_to_mesh(), (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(l.mesh_to_tensor(), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.slice_shape(), Shape("batch:50;rows_px:28;hidden:256"));
  EXPECT_EQ(l.slice_size(), 50 * 28 * 256);
  EXPECT_EQ(l.slice_begin(0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(l.slice_begin(6), (std::vector<int64_t>{50, 0, 512}));  // coordinates (1, 2)
  EXPECT_EQ(l.to_string(), "[batch:100@rows, rows_px:28, hidden:1024@cols]");
  EXPECT_FALSE(l.is_fully_replicated());
  TensorLayout same = TensorLayout::make(Shape("batch:100;rows_px:28;hidden:1024"),
                                         LayoutRules("hidden:cols;batch:rows"), m, "y");
  EXPECT_EQ(l, same);
  EXPECT_EQ(l.hash(), same.hash());
  TensorLayout r = TensorLayout::replicated(Shape("a:3"), m);
  EXPECT_TRUE(r.is_fully_replicated());
  EXPECT_EQ(r.slice_shape(), Shape("a:3"));
  EXPECT_NE(r, l);
}

TEST(TensorLayoutTest, ValidationErrorsNameEverything) {
  MeshShape m("rows:2;cols:4");
  // Not divisible.
  expect_contains(
      layout_error([&] {
        TensorLayout::make(Shape("batch:6;hidden:10"), LayoutRules("hidden:cols"), m, "h");
      }),
      {"tensor \"h\"", "dimension \"hidden\" of size 10", "mesh dimension \"cols\" of size 4",
       "not divisible"});
  // Two dimensions of one tensor on the same mesh dimension.
  expect_contains(layout_error([&] {
                    TensorLayout::make(Shape("batch:8;hidden:8"),
                                       LayoutRules("batch:rows;hidden:rows"), m, "w");
                  }),
                  {"tensor \"w\"", "\"batch\" and \"hidden\"", "mesh dimension \"rows\""});
  // One tensor dimension on two mesh dimensions.
  expect_contains(layout_error([&] {
                    TensorLayout::make(Shape("batch:8"), LayoutRules("batch:rows;batch:cols"), m,
                                       "x");
                  }),
                  {"tensor dimension \"batch\"", "two mesh dimensions", "\"rows\"", "\"cols\""});
  // A rule naming a mesh dimension the mesh does not have.
  expect_contains(layout_error([&] {
                    TensorLayout::make(Shape("batch:8"), LayoutRules("batch:model"), m, "x");
                  }),
                  {"\"batch:model\"", "mesh dimension \"model\"", "rows:2;cols:4"});
  expect_contains(layout_error([] { LayoutRules("batch;rows"); }), {"malformed layout string"});
  expect_contains(layout_error([] { LayoutRules("a:b;a:b"); }), {"repeat"});
}

}  // namespace
}  // namespace mtf
