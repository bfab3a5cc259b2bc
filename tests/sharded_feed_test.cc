// Sharded input: in a multi-process job each rank may feed just its block of
// a placeholder (Session::local_feed_block): the same losses as whole feeds,
// bit for bit, with 1/n of the batch read per data-parallel rank; wrong
// shapes are errors naming both shapes.
#include <gtest/gtest.h>

#include <thread>

#include "mtf/mtf.h"
#include "tcp_world.h"

namespace mtf {
namespace {

struct Net {
  Graph g;
  Mesh mesh{g, "mesh"};
  Dimension batch{"batch", 8}, model{"model", 4}, hidden{"hidden", 6};
  Tensor x, loss;
  std::vector<Operation*> train;
  Net() {
    x = placeholder(mesh, Shape({batch, model}), float32, "x");
    Tensor w = get_variable(mesh, "w", Shape({model, hidden}));
    loss = reduce_mean(square(einsum({x, w}, Shape({batch, hidden}))));
    train = SgdOptimizer(0.1f).minimize(loss);
  }
  // Rows [first, first + n) of step `step`'s batch.
  HostTensor rows(int step, int64_t first, int64_t n) const {
    HostTensor t(Shape({{"batch", n}, model}), float32);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < 4; ++j)
        t.data<float>()[i * 4 + j] = static_cast<float>((first + i) * 7 + j * 3 + step) / 50.f;
    return t;
  }
};

MeshConfig hybrid() {
  MeshConfig c;
  c.mesh_shape = MeshShape("rows:2;cols:2");
  c.layout = LayoutRules("batch:rows;hidden:cols");
  c.reproducible = true;
  return c;
}

TEST(ShardedFeed, OneProcessNeedsTheWholeTensor) {
  Net net;
  Session s(net.g, hybrid());
  const Session::FeedBlock b = s.local_feed_block(net.x);
  EXPECT_TRUE(b.whole);
  EXPECT_EQ(b.shape, net.x.shape());
  EXPECT_EQ(b.begin, (std::vector<int64_t>{0, 0}));
  s.run({net.loss}, {{net.x, net.rows(0, 0, 8)}}, net.train);
  EXPECT_EQ(s.last_fed_bytes(), 8 * 4 * 4);
  EXPECT_THROW(s.local_feed_block(net.loss), ValueError);
}

TEST(ShardedFeed, RanksFeedingTheirBlocksTrainAsWholeFeedsDo) {
  // The reference: one process, whole feeds.
  std::vector<float> want;
  {
    Net net;
    Session s(net.g, hybrid());
    for (int step = 0; step < 3; ++step)
      want.push_back(
          s.run({net.loss}, {{net.x, net.rows(step, 0, 8)}}, net.train)[0].data<float>()[0]);
  }
  const int port = testing::free_port();
  std::vector<std::string> errors(4);
  std::vector<std::vector<float>> got(4);
  std::vector<int64_t> fed(4);
  std::vector<Session::FeedBlock> blocks(4);
  std::string wrong_shape;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      try {
        Net net;
        MeshConfig c = hybrid();
        c.process_transport = connect_tcp(testing::tcp_options(r, 4, port));
        Session s(net.g, c);
        const Session::FeedBlock b = s.local_feed_block(net.x);
        blocks[r] = b;
        if (r == 3) {  // a block of another shape is refused, naming both
          try {
            s.run({net.loss}, {{net.x, net.rows(0, 0, 3)}}, net.train);
          } catch (const ValueError& e) {
            wrong_shape = e.what();
          }
        }
        for (int step = 0; step < 3; ++step) {
          // Rank 2 feeds whole tensors: the two kinds of feed mix.
          const HostTensor x =
              r == 2 ? net.rows(step, 0, 8) : net.rows(step, b.begin[0], b.shape[0].size);
          got[r].push_back(s.run({net.loss}, {{net.x, x}}, net.train)[0].data<float>()[0]);
          fed[r] = s.last_fed_bytes();
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(got[r], want) << "rank " << r;
    // batch over rows: ranks 0 and 1 hold rows 0-3, ranks 2 and 3 rows 4-7.
    EXPECT_FALSE(blocks[r].whole);
    EXPECT_EQ(blocks[r].begin, (std::vector<int64_t>{r < 2 ? 0 : 4, 0})) << "rank " << r;
    EXPECT_EQ(blocks[r].shape, Shape("batch:4;model:4"));
    EXPECT_EQ(fed[r], r == 2 ? 8 * 4 * 4 : 4 * 4 * 4) << "rank " << r;
  }
  EXPECT_NE(wrong_shape.find("this process's block [batch:4, model:4] (at [4, 0]"),
            std::string::npos)
      << wrong_shape;
}

}  // namespace
}  // namespace mtf
