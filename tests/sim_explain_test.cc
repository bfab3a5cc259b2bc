// Explaining a layout before running it (Session::explain: pictures of the
// tensors' blocks, collectives per op with bytes and simulated times), and
// the simulator's trace: slices carry op, kind, flops and bytes; link slices
// bytes and both cores; every message is a flow arrow from sender to
// receiver.
#include <fstream>
#include <regex>
#include <string>

#include "mtf/mtf.h"
#include "test_util.h"

namespace mtf {
namespace {

// x [batch, model] -> relu(x w1) w2, trained by SGD.
struct TwoLayerNet {
  Graph g;
  Mesh mesh{g, "mesh"};
  Tensor loss;
  std::vector<Operation*> train;
  TwoLayerNet() {
    const Dimension batch{"batch", 16}, model{"model", 8}, hidden{"hidden", 32};
    Tensor x = placeholder(mesh, Shape({batch, model}), float32, "x");
    Tensor w1 = get_variable(mesh, "w1", Shape({model, hidden}));
    Tensor w2 = get_variable(mesh, "w2", Shape({hidden, model}));
    Tensor y = einsum({relu(einsum({x, w1}, Shape({batch, hidden}))), w2}, Shape({batch, model}));
    loss = reduce_mean(square(y));
    train = SgdOptimizer(0.1f).minimize(loss);
  }
};

MeshConfig simulated(const char* mesh, const char* layout) {
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim.topology.chips = {2, 2};
  c.sim.mode = SimMode::kCostOnly;
  return c;
}

TEST(Explain, PicturesEveryVariableInputAndFetchAndListsCollectives) {
  TwoLayerNet net;
  Session s(net.g, simulated("rows:2;cols:2", "batch:rows;hidden:cols"));
  const std::string before = s.explain({net.loss}, net.train);
  EXPECT_NE(before.find("mesh rows:2;cols:2 (4 processors), layout \"batch:rows;hidden:cols\""),
            std::string::npos)
      << before;
  // w1 [model, hidden]: hidden over cols, replicated over rows.
  EXPECT_NE(before.find("variable w1 [model:8, hidden:32@cols] on rows:2;cols:2: 2 blocks of "
                        "[model:8, hidden:16], each on 2 processors\n"
                        "  hidden | all of the rest\n"
                        "  0:16   | p0 p2\n"
                        "  16:32  | p1 p3\n"),
            std::string::npos)
      << before;
  EXPECT_NE(before.find("input x [batch:16@rows, model:8]"), std::string::npos) << before;
  EXPECT_NE(before.find("fetch " + net.loss.name() + " []"), std::string::npos) << before;
  // The hidden-split products gather or reduce over cols, the batch-split
  // gradients over rows; no times before a run.
  EXPECT_NE(before.find("/cols "), std::string::npos) << before;
  EXPECT_NE(before.find("/rows "), std::string::npos) << before;
  EXPECT_EQ(before.find("simulated:"), std::string::npos) << before;
  s.run({net.loss}, {}, net.train);
  const std::string after = s.explain({net.loss}, net.train);
  EXPECT_TRUE(std::regex_search(after, std::regex("simulated: [0-9]+ bytes sent, [0-9.]+ us\n")))
      << after;
  EXPECT_NE(after.find("in the last simulated run"), std::string::npos) << after;
}

TEST(Explain, DataParallelNeedsNoPictureOfSplitWeights) {
  TwoLayerNet net;
  MeshConfig c;
  c.mesh_shape = MeshShape("all:2");
  c.layout = LayoutRules("");
  Session s(net.g, c);
  const std::string text = s.explain({net.loss}, net.train);
  EXPECT_NE(text.find("every processor holds the whole tensor (p0-p1)"), std::string::npos) << text;
  EXPECT_NE(text.find("none: every op runs on its own slices"), std::string::npos) << text;
}

TEST(SimTrace, SlicesCarryBytesAndMessagesAreFlows) {
  TwoLayerNet net;
  MeshConfig c = simulated("all:4", "batch:all");
  c.sim.topology.chips = {4, 1};
  c.sim.trace_path = ::testing::TempDir() + "/explain_trace.json";
  Session s(net.g, c);
  s.run({net.loss}, {}, net.train);
  std::ifstream in(c.sim.trace_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Core 0's slices: the bytes each sent add up to what the report says.
  const std::regex sent(R"re("ph":"X","pid":0,"tid":0,[^\n]*"bytes_sent":([0-9]+))re");
  int64_t total = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), sent); it != std::sregex_iterator();
       ++it)
    total += std::stoll((*it)[1]);
  EXPECT_GT(total, 0);
  EXPECT_EQ(total, s.simulation_report().per_core.at(0).bytes_sent);
  EXPECT_NE(text.find(R"("kind":"allreduce")"), std::string::npos);
  EXPECT_NE(text.find(R"("kind":"compute","flops":)"), std::string::npos);
  // Link slices name both cores; every flow start has its end.
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"re("pid":1,[^\n]*"from_core":[0-3],"to_core":[0-3])re")));
  const std::regex start(R"re("ph":"s","id":([0-9]+),"pid":0,"tid":([0-9]+),"ts":([0-9.e+-]+))re");
  const std::regex finish(
      R"re("ph":"f","bp":"e","id":([0-9]+),"pid":0,"tid":([0-9]+),"ts":([0-9.e+-]+))re");
  std::map<std::string, double> sent_at;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), start);
       it != std::sregex_iterator(); ++it)
    sent_at[(*it)[1]] = std::stod((*it)[3]);
  int finished = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), finish);
       it != std::sregex_iterator(); ++it) {
    ASSERT_TRUE(sent_at.count((*it)[1])) << "a flow end without its start";
    EXPECT_LE(sent_at[(*it)[1]], std::stod((*it)[3])) << "a message arrived before it was sent";
    ++finished;
  }
  EXPECT_GT(finished, 0);
  EXPECT_EQ(static_cast<size_t>(finished), sent_at.size());
}

}  // namespace
}  // namespace mtf
