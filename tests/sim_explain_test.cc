// Explaining a layout before running it (Session::explain: pictures of the
// tensors' blocks, collectives per op with bytes and simulated times), and
// the simulator's trace: slices carry op, kind, flops and bytes; link slices
// bytes and both cores; every message is a flow arrow from sender to
// receiver.
#include <fstream>
#include <map>
#include <sstream>
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

// The value of "key" in a line of trace JSON ("" when absent): the text
// after `"key":` up to the next ',' or '}'.
std::string field(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = line.find(k);
  if (at == std::string::npos) return "";
  const size_t from = at + k.size();
  return line.substr(from, line.find_first_of(",}", from) - from);
}

MeshConfig simulated(const char* mesh, const char* layout) {
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->topology.chips = {2, 2};
  c.sim->mode = SimMode::kCostOnly;
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
  const size_t sim = after.find("; simulated: ");
  ASSERT_NE(sim, std::string::npos) << after;
  EXPECT_LT(after.find(" bytes sent, ", sim), after.find(" us\n", sim)) << after;
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
  c.sim->topology.chips = {4, 1};
  c.sim->trace_path = ::testing::TempDir() + "/explain_trace.json";
  Session s(net.g, c);
  s.run({net.loss}, {}, net.train);
  std::ifstream in(c.sim->trace_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Core 0's slices: the bytes each sent add up to what the report says.
  int64_t total = 0;
  bool link_names_cores = false;
  std::map<std::string, double> sent_at;
  std::vector<std::pair<std::string, double>> arrivals;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(R"("ph":"X","pid":0,"tid":0,)") != std::string::npos &&
        !field(line, "bytes_sent").empty())
      total += std::stoll(field(line, "bytes_sent"));
    if (line.find(R"("ph":"X","pid":1,)") != std::string::npos &&
        !field(line, "from_core").empty() && !field(line, "to_core").empty())
      link_names_cores = true;
    if (line.find(R"("ph":"s")") != std::string::npos)
      sent_at[field(line, "id")] = std::stod(field(line, "ts"));
    if (line.find(R"("ph":"f","bp":"e")") != std::string::npos)
      arrivals.emplace_back(field(line, "id"), std::stod(field(line, "ts")));
  }
  EXPECT_GT(total, 0);
  EXPECT_EQ(total, s.simulation_report().per_core.at(0).bytes_sent);
  EXPECT_NE(text.find(R"("kind":"allreduce")"), std::string::npos);
  EXPECT_NE(text.find(R"("kind":"compute","flops":)"), std::string::npos);
  EXPECT_TRUE(link_names_cores);
  // Every flow end has its start, and no message arrives before it was sent.
  for (const auto& [id, at] : arrivals) {
    ASSERT_TRUE(sent_at.count(id)) << "a flow end without its start: " << id;
    EXPECT_LE(sent_at[id], at) << "message " << id << " arrived before it was sent";
  }
  EXPECT_GT(arrivals.size(), 0u);
  EXPECT_EQ(arrivals.size(), sent_at.size());
}

}  // namespace
}  // namespace mtf
