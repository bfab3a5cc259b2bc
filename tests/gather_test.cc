// gather: indices sharing dimensions with the weights (batched gather).
#include "test_util.h"

namespace mtf {
namespace {

using testing::check_gradients;
using testing::eval;

// gather with indices that share dimensions with the weights: each index
// picks from its own part (Mesh TensorFlow's semantics), on one processor,
// with gradients, and under layouts splitting the shared, the gathered and
// the other dimensions.
TEST(GatherTest, SharedDimensionsAreBatchDimensions) {
  const Shape ws("b:3;v:5;d:4"), is("b:3;l:2");
  const HostTensor wv = testing::random_tensor(ws, 2);
  const HostTensor iv = HostTensor::from_ints(is, {0, 4, 2, 2, 3, 1});
  auto run = [&](const char* mesh_shape, const char* layout) {
    Graph g;
    Mesh mesh(g, "m");
    Tensor w = placeholder(mesh, ws, float32, "w");
    Tensor idx = import_host(mesh, iv);
    Tensor out = gather(w, idx, ws.get("v"));
    EXPECT_EQ(out.shape(), Shape("b:3;l:2;d:4"));
    Tensor dw = gradients({reduce_sum(out * out)}, {w})[0];
    MeshConfig mc;
    mc.mesh_shape = MeshShape(mesh_shape);
    mc.layout = LayoutRules(layout);
    mc.reproducible = true;
    Session s(g, mc);
    return s.run({out, dw}, {{w, wv}});
  };
  const std::vector<HostTensor> one = run("", "");
  const std::vector<float> w = wv.to_floats(), got = one[0].to_floats();
  for (int b = 0; b < 3; ++b)
    for (int l = 0; l < 2; ++l)
      for (int d = 0; d < 4; ++d) {
        const int v = iv.data<int32_t>()[b * 2 + l];
        EXPECT_EQ(got[(b * 2 + l) * 4 + d], w[(b * 5 + v) * 4 + d]) << b << " " << l << " " << d;
      }
  for (const auto& [m, l] : std::vector<std::pair<const char*, const char*>>{
           {"r:3", "b:r"}, {"r:5", "v:r"}, {"r:2;c:2", "d:r;l:c"}, {"r:3;c:2", "b:r;d:c"}}) {
    SCOPED_TRACE(std::string(m) + " " + l);
    const std::vector<HostTensor> got_mesh = run(m, l);
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_EQ(got_mesh[i].to_floats(), one[i].to_floats()) << i;
  }
  // w[b, v], idx[b] -> [b]: the example.
  Graph g;
  Mesh mesh(g, "m");
  Tensor w2 = import_host(mesh, HostTensor::from_floats(Shape("b:2;v:3"), {1, 2, 3, 4, 5, 6}));
  Tensor i2 = import_host(mesh, HostTensor::from_ints(Shape("b:2"), {2, 0}));
  EXPECT_EQ(eval(gather(w2, i2, Dimension{"v", 3})), (std::vector<float>{3, 4}));
  EXPECT_THROW(gather(w2, import_host(mesh, HostTensor::from_ints(Shape("v:3"), {0, 1, 2})),
                      Dimension{"v", 3}),
               ShapeError);
  EXPECT_THROW(gather(w2, import_host(mesh, HostTensor::from_ints(Shape("b:3"), {0, 1, 2})),
                      Dimension{"v", 3}),
               ShapeError);
}

TEST(GatherTest, SharedDimensionGradientMatchesFiniteDifferences) {
  check_gradients({Shape("b:3;v:4;d:2")}, [](const std::vector<Tensor>& x) {
    Tensor idx = import_host(x[0].mesh(), HostTensor::from_ints(Shape("b:3"), {3, 0, 2}));
    return gather(x[0], idx, Dimension{"v", 4});
  });
}

}  // namespace
}  // namespace mtf
