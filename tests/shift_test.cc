// shift on a split dimension: without wrap-around it reads each block's
// rows from the processors holding them (a halo exchange of |offset| rows,
// or whole blocks when the offset passes a block) instead of gathering the
// dimension; results and gradients keep the one-processor bits on both mesh
// implementations. With wrap-around the dimension is gathered.
#include "test_util.h"

namespace mtf {
namespace {

using testing::random_tensor;

MeshConfig on(const char* mesh_shape, const char* layout, MeshImpl impl = MeshImpl::kSimd) {
  return testing::mesh_config(mesh_shape, layout, impl);
}

TEST(ShiftTest, SplitDimensionsGiveTheOneProcessorBits) {
  const Shape shape("b:3;n:16;c:2");
  const HostTensor xv = random_tensor(shape, 5);
  for (int64_t offset : {-20, -9, -5, -1, 0, 1, 3, 4, 9, 16}) {
    for (bool wrap : {false, true}) {
      auto run = [&](const MeshConfig& mc) {
        Graph g;
        Mesh mesh(g, "m");
        Tensor x = placeholder(mesh, shape, float32, "x");
        Tensor y = shift(x * x, offset, "n", wrap);
        Tensor dx = gradients({reduce_sum(y * y)}, {x})[0];
        Session s(g, mc);
        return s.run({y, dx}, {{x, xv}});
      };
      const std::vector<HostTensor> one = run(MeshConfig{});
      for (const MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
        for (const auto& [m, l] : std::vector<std::pair<const char*, const char*>>{
                 {"r:4", "n:r"}, {"r:2;c:2", "n:r;c:c"}, {"r:2;q:8", "c:r;n:q"}}) {
          SCOPED_TRACE(std::string(m) + " " + l + " offset " + std::to_string(offset) +
                       (wrap ? " wrap" : "") + (impl == MeshImpl::kSimd ? " simd" : " placement"));
          const std::vector<HostTensor> got = run(on(m, l, impl));
          for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(got[i].to_floats(), one[i].to_floats());
        }
      }
    }
  }
}

TEST(ShiftTest, ASplitDimensionExchangesOnlyTheRowsItNeeds) {
  // n:16 over 4 processors, 4 rows each; a row is b*c = 3*2 floats. With
  // wrap-around, the rows shifted off one end come from the processor at the
  // other (Mesh TensorFlow's neighbour-to-neighbour passing), so the most any
  // processor sends is the same as without.
  struct Case {
    int64_t offset, rows;  // rows: most any processor sends
    bool wrap;
  };
  for (const Case& c : std::vector<Case>{{1, 1, false},
                                         {-3, 3, false},
                                         {4, 4, false},
                                         {6, 4, false},
                                         {0, 0, false},
                                         {1, 1, true},
                                         {-3, 3, true},
                                         {4, 4, true},
                                         {6, 4, true},
                                         {16, 0, true},
                                         {-17, 1, true}}) {
    SCOPED_TRACE("offset " + std::to_string(c.offset) + (c.wrap ? " wrap" : ""));
    Graph g;
    Mesh mesh(g, "m");
    Tensor x = placeholder(mesh, Shape("b:3;n:16;c:2"), float32, "x");
    Tensor y = shift(x, c.offset, "n", c.wrap);
    Session s(g, on("r:4", "n:r"));
    const std::string counters = s.counters_text({y});
    EXPECT_EQ(counters.find("allgather"), std::string::npos) << counters;
    if (c.rows == 0) {
      EXPECT_EQ(counters.find("halo"), std::string::npos) << counters;
      continue;
    }
    EXPECT_NE(counters.find("op shift: halo/r " + std::to_string(c.rows * 3 * 2 * 4) + " bytes"),
              std::string::npos)
        << counters;
  }
}

}  // namespace
}  // namespace mtf
