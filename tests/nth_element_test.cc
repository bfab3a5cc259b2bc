// nth_largest_element / nth_smallest_element and weights_nonzero, as Mesh
// TensorFlow defines them.
#include "test_util.h"

namespace mtf {
namespace {

using testing::eval;

TEST(NthElementTest, LargestAndSmallestAlongADimension) {
  Graph g;
  Mesh mesh(g, "m");
  // Rows [3, 1, 4, 1, 5] and [9, 2, 6, 5, 3].
  Tensor x =
      import_host(mesh, HostTensor::from_floats(Shape("r:2;c:5"), {3, 1, 4, 1, 5, 9, 2, 6, 5, 3}));
  const Dimension c{"c", 5};
  EXPECT_EQ(eval(nth_largest_element(x, 0, c)), (std::vector<float>{5, 9}));
  EXPECT_EQ(eval(nth_largest_element(x, 1, c)), (std::vector<float>{4, 6}));
  EXPECT_EQ(eval(nth_largest_element(x, 4, c)), (std::vector<float>{1, 2}));
  EXPECT_EQ(eval(nth_smallest_element(x, 0, c)), (std::vector<float>{1, 2}));
  EXPECT_EQ(eval(nth_smallest_element(x, 1, c)), (std::vector<float>{1, 3}));
  EXPECT_EQ(nth_largest_element(x, 2, c).shape(), Shape("r:2"));
  EXPECT_THROW(nth_largest_element(x, 5, c), ValueError);
  EXPECT_THROW(nth_smallest_element(x, -1, c), ValueError);
  // The same on a mesh splitting each dimension.
  for (const char* layout : {"r:p", "c:p"}) {
    MeshConfig mc;
    mc.mesh_shape = MeshShape(std::string("p:") + (layout[0] == 'r' ? "2" : "5"));
    mc.layout = LayoutRules(layout);
    Session s(g, mc);
    EXPECT_EQ(s.run(nth_largest_element(x, 1, c)).to_floats(), (std::vector<float>{4, 6}))
        << layout;
  }
}

TEST(NthElementTest, WeightsNonzeroMasksZeros) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor ids = import_host(mesh, HostTensor::from_ints(Shape("t:5"), {7, 0, 3, 0, 1}));
  EXPECT_EQ(eval(weights_nonzero(ids)), (std::vector<float>{1, 0, 1, 0, 1}));
  Tensor f = import_host(mesh, HostTensor::from_floats(Shape("t:3"), {0.f, -0.f, 2.5f}));
  EXPECT_EQ(eval(cast(weights_nonzero(f, int32), float32)), (std::vector<float>{0, 0, 1}));
}

}  // namespace
}  // namespace mtf
