// request_interrupt(): every kind of run stops between steps with an
// InterruptedError and changes nothing; connect_process_transport's choices.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect_error.h"
#include "mtf/mpi_transport.h"
#include "mtf/mtf.h"
#include "mtf/tcp_transport.h"
#include "test_util.h"

namespace mtf {
namespace {

struct Model {
  Graph graph;
  Tensor loss;
  std::vector<Operation*> train;
  Model() {
    Mesh mesh(graph, "mesh");
    Tensor w = get_variable(mesh, "w", Shape("a:4;b:6"));
    loss = reduce_sum(square(w));
    train = SgdOptimizer(0.1f).minimize(loss);
  }
};

class Interrupt : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override { clear_interrupt(); }
};

TEST_P(Interrupt, StopsTheRunAndChangesNothing) {
  Model m;
  MeshConfig c;
  const std::string kind = GetParam();
  if (kind != "one") {
    c.mesh_shape = MeshShape("r:2;k:2");
    c.layout = LayoutRules("a:r;b:k");
  }
  if (kind == "placement") c.impl = MeshImpl::kPlacement;
  // Fibers: see testing::kAddressSanitizer. Under ASan the SIMD run takes a
  // thread per core, and the simulator (fibers only) is left out.
  if (kind == "simd" && testing::kAddressSanitizer) c.execution = RankExecution::kThreads;
  if (kind == "simulated" && testing::kAddressSanitizer)
    GTEST_SKIP() << "exceptions on fiber stacks confuse ASan";
  if (kind == "simulated") {
    c.impl = MeshImpl::kSimulated;
    c.sim->topology.chips = {4, 1};
  }
  Session s(m.graph, c);
  s.run({m.loss}, {}, m.train);
  const std::vector<float> before = s.variable_value("w").to_floats();
  const uint64_t counter = s.run_counter();
  request_interrupt();
  EXPECT_TRUE(interrupt_requested());
  try {
    s.run({m.loss}, {}, m.train);
    FAIL() << "the run did not stop";
  } catch (const InterruptedError& e) {
    // Not blamed on an op: the message is the request's.
    EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("while running"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.variable_value("w").to_floats(), before);
  EXPECT_EQ(s.run_counter(), counter);
  clear_interrupt();
  s.run({m.loss}, {}, m.train);  // runs again, and trains
  EXPECT_NE(s.variable_value("w").to_floats(), before);
  EXPECT_EQ(s.run_counter(), counter + 1);
}

INSTANTIATE_TEST_SUITE_P(EveryMeshImpl, Interrupt,
                         ::testing::Values("one", "simd", "placement", "simulated"));

TEST(InterruptTest, StopsAutoLayout) {
  Model m;
  AutoLayoutOptions o;
  o.topology = Topology();  // one core per chip
  o.topology.chips = {4, 1};
  request_interrupt();
  EXPECT_THROW(auto_layout(m.graph, MeshShape("r:2;k:2"), {m.loss}, m.train, o), InterruptedError);
  clear_interrupt();
  EXPECT_FALSE(interrupt_requested());
  EXPECT_NO_THROW(auto_layout(m.graph, MeshShape("r:2;k:2"), {m.loss}, m.train, o));
}

TEST(ProcessTransportTest, ChoosesAsTheExamplesFlagDoes) {
  std::string name = "stale";
  // Not started by a launcher here: auto and none join no job.
  EXPECT_EQ(connect_process_transport("none", &name), nullptr);
  EXPECT_EQ(name, "");
  if (!TcpOptions::in_environment() && !in_mpi_environment()) {
    EXPECT_EQ(connect_process_transport("auto"), nullptr);
  }
  testing::expect_error<ValueError>([&] { connect_process_transport("udp"); },
                                    {"auto, tcp, mpi or none"});
}

}  // namespace
}  // namespace mtf
