// The transport contract (transport_contract.h) over MPI: run under mpirun,
// every process is one rank and runs every case in turn, with a barrier
// after each; a rank's failed check fails its process and so the run.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "mtf/collectives.h"
#include "mtf/mpi_transport.h"
#include "transport_contract.h"

namespace mtf {
namespace {

Transport* job = nullptr;

class MpiTransportContract : public ::testing::TestWithParam<size_t> {};

TEST_P(MpiTransportContract, Holds) {
  const testing::ContractCase& c = testing::transport_contract()[GetParam()];
  const std::string outcome = c.run(*job);
  c.check(job->rank(), job->size(), outcome);
  barrier(*job, Group::all(job->size(), job->rank()), (uint64_t{1} << 32) + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Mpi, MpiTransportContract,
                         ::testing::Range(size_t{0}, testing::transport_contract().size()),
                         [](const auto& info) {
                           return testing::transport_contract()[info.param].name;
                         });

}  // namespace
}  // namespace mtf

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!mtf::in_mpi_environment()) {
    std::printf("not started by mpirun: skipped\n");
    return 77;
  }
  std::unique_ptr<mtf::Transport> t = mtf::connect_mpi(std::chrono::seconds(30));
  if (t->size() < 2) {
    std::printf("the contract needs at least 2 ranks: skipped\n");
    return 77;
  }
  mtf::job = t.get();
  const int rc = RUN_ALL_TESTS();
  mtf::job = nullptr;
  t.reset();
  return rc;
}
