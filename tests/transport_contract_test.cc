// The transport contract (transport_contract.h) on every transport this
// process can host: in-process ranks (threads), and TCP ranks (threads of
// this process) over loopback sockets and over shared-memory links, on 2, 3
// and 5 ranks. MPI runs the same cases
// under mpirun (transport_contract_mpi.cc).
#include "transport_contract.h"

#include <gtest/gtest.h>

#include <tuple>

#include "mtf/in_process_transport.h"
#include "tcp_world.h"

namespace mtf {
namespace {

enum class Kind { kInProcess, kTcp, kSharedMemory };
using Param = std::tuple<Kind, int, size_t>;  // transport, ranks, case

class TransportContract : public ::testing::TestWithParam<Param> {};

TEST_P(TransportContract, Holds) {
  const auto [kind, n, index] = GetParam();
  const testing::ContractCase& c = testing::transport_contract()[index];
  std::vector<std::string> outcomes(n);
  auto body = [&](Transport& t) { outcomes[t.rank()] = c.run(t); };
  if (kind == Kind::kInProcess) {
    run_in_process(n, body, RankExecution::kThreads, std::chrono::seconds(20));
  } else {
    const std::vector<std::string> errors =
        testing::run_tcp(n, body, std::chrono::seconds(20), 0, kind == Kind::kSharedMemory);
    for (int r = 0; r < n; ++r) ASSERT_EQ(errors[r], "") << "rank " << r << " could not connect";
  }
  for (int r = 0; r < n; ++r) c.check(r, n, outcomes[r]);
}

INSTANTIATE_TEST_SUITE_P(
    Transports, TransportContract,
    ::testing::Combine(::testing::Values(Kind::kInProcess, Kind::kTcp, Kind::kSharedMemory),
                       ::testing::Values(2, 3, 5),
                       ::testing::Range(size_t{0}, testing::transport_contract().size())),
    [](const auto& info) {
      const Kind kind = std::get<0>(info.param);
      return std::string(kind == Kind::kInProcess ? "InProcess"
                         : kind == Kind::kTcp     ? "Tcp"
                                                  : "SharedMemory") +
             "_" + std::to_string(std::get<1>(info.param)) + "ranks_" +
             testing::transport_contract()[std::get<2>(info.param)].name;
    });

}  // namespace
}  // namespace mtf
