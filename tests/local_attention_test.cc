// Local attention (mtf/layers.h) and the halo exchanges (mtf/ops.h): the
// one-processor bits when the blocks and heads are split (the halo then
// crosses processors), on both mesh implementations, gradients that flow
// through the halo to the weights, and clear errors. The values against
// their definitions: tests/python/test_local_attention.py.
#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

struct Case {
  const char* name;
  const char* shape;
  std::function<Tensor(const Tensor&)> layer;
};

std::vector<Case> cases() {
  const Dimension kv{"kv", 4}, heads{"heads", 2};
  return {
      {"masked_local_attention_1d", "batch:2;length:16;io:6",
       [=](const Tensor& x) { return layers::masked_local_attention_1d(x, kv, heads, 3, "a", 4); }},
      {"local_self_attention_spatial_blocks", "batch:2;length:4;w:2;io:6",
       [=](const Tensor& x) {
         return layers::local_self_attention_spatial_blocks(x, kv, heads, true, "a");
       }},
      {"local_2d_self_attention_spatial_blocks", "batch:1;length:2;wb:2;h:2;w:2;io:6",
       [=](const Tensor& x) {
         return layers::local_2d_self_attention_spatial_blocks(x, kv, heads, false, "a");
       }},
      {"multihead_self_attention_memory_compressed", "batch:2;length:8;io:6",
       [=](const Tensor& x) {
         return layers::multihead_self_attention_memory_compressed(x, true, 2, kv, heads, "a");
       }},
  };
}

// Output and the weights' gradients of sum(layer(x)^2).
std::vector<std::vector<float>> run(const Case& c, const MeshConfig& mc, const HostTensor& xv) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, Shape(c.shape), float32, "x");
  const Tensor y = c.layer(x);
  std::vector<Tensor> fetches = {y};
  for (const Tensor& gw : gradients({reduce_sum(square(y))}, g.trainable_variables()))
    fetches.push_back(gw);
  Session s(g, mc);
  std::vector<std::vector<float>> out;
  for (const HostTensor& t : s.run(fetches, {{x, xv}})) out.push_back(t.to_floats());
  return out;
}

TEST(LocalAttentionTest, SplitBlocksAndHeadsGiveOneProcessorsBits) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const HostTensor xv = testing::random_tensor(Shape(c.shape), 3);
    const auto one = run(c, mesh_config("all:1", ""), xv);
    ASSERT_EQ(one.size(), 5u);  // y and q, k, v, o's gradients
    for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement})
      EXPECT_EQ(run(c, mesh_config("rows:2;cols:2", "length:rows;heads:cols", impl), xv), one);
  }
}

TEST(LocalAttentionTest, BadArgumentsAreClearErrors) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, Shape("batch:2;length:6;io:4"), float32, "x");
  const Dimension kv{"kv", 2}, heads{"heads", 1};
  EXPECT_THROW(layers::masked_local_attention_1d(x, kv, heads, 0, "a"), ValueError);
  EXPECT_THROW(layers::masked_local_attention_1d(x, kv, heads, 2, "a", 4), ValueError);
  EXPECT_THROW(layers::local_self_attention_spatial_blocks(x, kv, heads, true, "a"), ShapeError);
  EXPECT_THROW(layers::compress_mean(x, "length", 4), ValueError);
  EXPECT_THROW(halo_exchange(x, "length", "length", 1), ValueError);
  EXPECT_THROW(left_halo_exchange(x, "length", "io", -1), ValueError);
  EXPECT_THROW(layers::masked_local_attention_1d_incremental(
                   x, x, x, constant(mesh, 0.f, Shape(), int32), "a"),
               ShapeError);  // prev_k needs [batch..., heads, window, kv]
}

}  // namespace
}  // namespace mtf
