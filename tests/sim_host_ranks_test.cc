// Ranks of a host that compute at once: they share the cache and the
// memory, pay the busy factor, wake peers that blocked at a collective, and
// wait their turn at collectives when they outnumber the CPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "expect_error.h"
#include "mtf/mtf.h"
#include "sim_host_util.h"
#include "test_util.h"

namespace mtf {
namespace {

// Ranks computing at once share the cache (cache_bytes / the CPUs they
// fill) and stream beyond it at memory_bandwidth_busy each; a rank alone
// keeps both.
TEST(SimHost, RanksComputingAtOnceShareTheCacheAndTheMemory) {
  Topology one = host(1), two = host(2), four = host(4);
  for (Topology* t : {&one, &two, &four}) t->host.memory_bandwidth_busy = 8e9;
  EXPECT_NEAR(one.host_roofline_seconds(0, 8e5), 8e5 / 80e9, 1e-15);
  EXPECT_NEAR(one.host_roofline_seconds(0, 8e6), 8e6 / 20e9, 1e-15);
  EXPECT_NEAR(two.host_roofline_seconds(0, 4e5), 4e5 / 80e9, 1e-15);
  EXPECT_NEAR(two.host_roofline_seconds(0, 8e5), 8e5 / 8e9, 1e-15);
  EXPECT_NEAR(two.host_roofline_seconds(0, 8e6), 8e6 / 8e9, 1e-15);
  // More ranks than CPUs: the CPUs are as full as with two.
  EXPECT_NEAR(four.host_roofline_seconds(0, 8e5), two.host_roofline_seconds(0, 8e5), 1e-15);
  // Unmeasured: the chip's rate; never above it.
  two.host.memory_bandwidth_busy = 0;
  EXPECT_NEAR(two.host_roofline_seconds(0, 8e6), 8e6 / 20e9, 1e-15);
  two.host.memory_bandwidth_busy = 50e9;
  EXPECT_NEAR(two.host_roofline_seconds(0, 8e6), 8e6 / 20e9, 1e-15);
  EXPECT_NE(two.to_file().find("memory_bandwidth_busy = 5e+10"), std::string::npos);
  EXPECT_THROW(two.set("memory_bandwidth_busy", "-1"), ValueError);
}

// A collective step pays collective_wake when the ranks (threads filling
// at most the CPUs) arrive further apart than collective_wake_after:
// cpu_spread times the compute since the last collective.
TEST(SimHost, ACollectiveAfterLongComputeWakesBlockedPeers) {
  Topology one = host(1), two = host(2), four = host(4);
  for (Topology* t : {&one, &two, &four}) {
    t->host.collective_wake = 40e-6;
    t->host.collective_wake_after = 30e-6;
    t->host.cpu_spread = 0.1;
  }
  EXPECT_EQ(two.host_collective_wake(0.2e-3), 0);  // 20 us apart: the peer still spins
  EXPECT_EQ(two.host_collective_wake(0.4e-3), 40e-6);
  EXPECT_EQ(one.host_collective_wake(1), 0);   // nobody to wake
  EXPECT_EQ(four.host_collective_wake(1), 0);  // taking turns: oversubscribed_wait's
  Topology processes = two;
  processes.host_ranks = Topology::HostRanks::kProcesses;
  EXPECT_EQ(processes.host_collective_wake(1), 0);  // measured for threads only
  Topology level = two;
  level.host.cpu_spread = 0;
  EXPECT_EQ(level.host_collective_wake(1), 0);
  EXPECT_NE(two.to_file().find("collective_wake = 4e-05"), std::string::npos);
  EXPECT_NE(two.to_file().find("cpu_spread = 0.1"), std::string::npos);
  Topology bad = two;
  EXPECT_THROW(bad.set("cpu_spread", "-0.1"), ValueError);

  // In a simulated step: a data-parallel product's allreduce follows its
  // compute; with the wake the step is longer by it, once per collective.
  Graph g;
  Mesh mesh(g, "mesh");
  const Dimension b{"b", 64}, i{"i", 512}, o{"o", 512};
  Tensor x = placeholder(mesh, Shape({b, i}), float32, "x");
  Tensor w = get_variable(mesh, "w", Shape({i, o}));
  Tensor y = reduce_sum(einsum({x, w}, Shape({b, o})));
  auto step = [&](const Topology& t) {
    Session s(g, cost_only(t, "rows:2", "b:rows"));
    s.run(y, {});
    return s.simulation_report().step_time;
  };
  Topology spread = two, none = two;
  spread.host.cpu_spread = 1;
  none.host.collective_wake = 0;
  EXPECT_NEAR(step(spread) - step(none), 40e-6, 1e-9);
}

// Ranks as threads that fill at most the CPUs reach each collective apart
// by collective_skew times the square root of the compute since the last
// one, and the step waits for the last of them.
TEST(SimHost, RanksReachACollectiveApartByTheSkewOfTheirCompute) {
  Topology one = host(1), two = host(2), four = host(4);
  for (Topology* t : {&one, &two, &four}) t->host.collective_skew = 2e-3;
  EXPECT_NEAR(two.host_collective_skew(4e-3), 2e-3 * 0.0632455532, 1e-12);
  EXPECT_NEAR(two.host_collective_skew(16e-3), 2 * two.host_collective_skew(4e-3), 1e-15);
  EXPECT_EQ(two.host_collective_skew(0), 0);
  EXPECT_EQ(one.host_collective_skew(1), 0);   // nobody to wait for
  EXPECT_EQ(four.host_collective_skew(1), 0);  // taking turns: oversubscribed_wait's
  Topology processes = two;
  processes.host_ranks = Topology::HostRanks::kProcesses;
  EXPECT_EQ(processes.host_collective_skew(1), 0);  // measured for threads only
  EXPECT_NE(two.to_file().find("collective_skew = 0.002"), std::string::npos);
  Topology read = host(2);
  read.set("collective_skew", "0.002");
  EXPECT_EQ(read.host.collective_skew, 2e-3);
  EXPECT_THROW(two.set("collective_skew", "-0.1"), ValueError);

  // In a simulated step: the data-parallel MLP's gradient allreduces each
  // wait; the step grows, by no more than every collective after all the
  // compute would.
  Topology none = two;
  none.host.collective_skew = 0;
  const SimReport with = simulate_mlp(two, "b:2", "batch:b");
  const SimReport without = simulate_mlp(none, "b:2", "batch:b");
  const double compute = without.per_core.front().compute;
  EXPECT_GT(with.step_time - without.step_time, 0);
  EXPECT_LE(with.step_time - without.step_time, 8 * 2e-3 * std::sqrt(compute));
}

// Ranks that fill the CPUs stream their products' matrices at once: each
// keeps what it was measured to read while they all stream, or else its
// share of what one rank on every CPU reads (here 14 GB/s for two CPUs: 7
// each, 0.7 of a thread's own 10), for memory's rate and the cache's
// alike; a single rank, or a host whose all-CPU rate is unmeasured, keeps
// its own.
TEST(SimHost, RanksFillingTheCpusShareTheMemoryRate) {
  Topology one = host(1), two = host(2), unmeasured = host(2);
  for (Topology* t : {&one, &two, &unmeasured})
    t->apply_overrides(
        "gemm_memory_bandwidth=10e9,gemm_cache_bandwidth=40e9,gemm_narrow=0,"
        "gemm_narrow_all_cpus=0");
  one.apply_overrides("gemm_memory_bandwidth_all_cpus=14e9");
  two.apply_overrides("gemm_memory_bandwidth_all_cpus=14e9");
  const double matrix = 4.0 * (2048 + 2048 * 2048 + 2048);  // 16 MiB: memory's rate
  EXPECT_NEAR(two.host_gemm_seconds(1, 2048, 2048), matrix / (0.7 * 10e9), 1e-12);
  EXPECT_NEAR(unmeasured.host_gemm_seconds(1, 2048, 2048), matrix / 10e9, 1e-12);
  EXPECT_NEAR(one.host_gemm_seconds(1, 2048, 2048), matrix / 14e9, 1e-12);
  const double small = 4.0 * (256 + 256 * 512 + 512);  // half a MiB: the cache's rate
  EXPECT_NEAR(two.host_gemm_seconds(1, 512, 256), small / (0.7 * 40e9), 1e-12);
  EXPECT_NEAR(unmeasured.host_gemm_seconds(1, 512, 256), small / 40e9, 1e-12);
  // Products bound by their flops are unchanged.
  EXPECT_NEAR(two.host_gemm_seconds(1024, 1024, 1024),
              unmeasured.host_gemm_seconds(1024, 1024, 1024), 1e-12);
  // Measured on the ranks themselves (6 GB/s each while both stream: 0.6
  // of a thread's 10), that share replaces the all-CPU rate's; a single
  // rank still keeps all of its own.
  two.apply_overrides("gemm_memory_bandwidth_busy=6e9");
  one.apply_overrides("gemm_memory_bandwidth_busy=6e9");
  EXPECT_NEAR(two.host_gemm_seconds(1, 2048, 2048), matrix / (0.6 * 10e9), 1e-12);
  EXPECT_NEAR(two.host_gemm_seconds(1, 512, 256), small / (0.6 * 40e9), 1e-12);
  EXPECT_NEAR(one.host_gemm_seconds(1, 2048, 2048), matrix / 14e9, 1e-12);
  EXPECT_NE(two.to_file().find("gemm_memory_bandwidth_busy = 6e+09"), std::string::npos);
}

TEST(SimHost, FillingTheCpusCostsTheBusyFactor) {
  Topology one = host(1), two = host(2), four = host(4);
  for (Topology* t : {&one, &two, &four}) {
    t->host.busy_in_program = 1.2;
    t->host.oversubscribed_in_program = 1.25;
  }
  // One rank keeps one CPU busy: no cost; two ranks as threads fill both.
  EXPECT_NEAR(one.host_step_seconds(1e-3), 1e-6 + 1e-3, 1e-12);
  EXPECT_NEAR(two.host_step_seconds(1e-3), (1e-6 + 1e-3) * 1.2, 1e-12);
  // More ranks than CPUs fill them too: the turns, the busy factor, and
  // the turns' own factor beyond it.
  EXPECT_NEAR(four.host_step_seconds(1e-3), 2 * (1e-6 + 1e-3) * 1.2 * 1.25, 1e-12);
  // Processes fill the CPUs the same way.
  two.host_ranks = Topology::HostRanks::kProcesses;
  EXPECT_NEAR(two.host_step_seconds(1e-3), (1e-6 + 1e-3) * 1.2, 1e-12);
  // Between one rank and all CPUs, by the share of the other CPUs filled.
  Topology eight = host(3);
  eight.host_cpus = 5;
  eight.host.busy_in_program = 1.2;
  EXPECT_NEAR(eight.host_step_seconds(1e-3), (1e-6 + 1e-3) * 1.1, 1e-12);
  // It round-trips through a machine file, and cannot be negative.
  EXPECT_NE(two.to_file().find("busy_in_program = 1.2"), std::string::npos);
  EXPECT_THROW(two.set("busy_in_program", "-1"), ValueError);
}

TEST(SimHost, MoreRanksThanCpusWaitAtEachCollective) {
  Topology two = host(2), four = host(4);
  two.host.oversubscribed_wait = four.host.oversubscribed_wait = 1e-3;
  EXPECT_DOUBLE_EQ(two.host_collective_wait(), 0);
  EXPECT_DOUBLE_EQ(four.host_collective_wait(), 1e-3);
  Topology four_without = four;
  four_without.host.oversubscribed_wait = 0;
  // The data-parallel MLP's gradients: allreduces, each 1 ms later.
  const double with = simulate_mlp(four, "b:4", "batch:b").step_time;
  const double without = simulate_mlp(four_without, "b:4", "batch:b").step_time;
  EXPECT_GE(with - without, 2e-3);
  EXPECT_LE(with - without, 10e-3);
  // Ranks that fit the CPUs do not wait.
  Topology two_without = two;
  two_without.host.oversubscribed_wait = 0;
  EXPECT_DOUBLE_EQ(simulate_mlp(two, "b:2", "batch:b").step_time,
                   simulate_mlp(two_without, "b:2", "batch:b").step_time);
  EXPECT_NE(four.to_file().find("oversubscribed_wait = 0.001"), std::string::npos);
}

// Ranks as processes wait in their own transport's way: their own figure
// when the machine file has one, the threads' figure otherwise.
TEST(SimHost, ProcessesWaitTheirOwnWayWhenMeasured) {
  Topology four = host(4);
  four.host.oversubscribed_wait = 1e-3;
  four.host_ranks = Topology::HostRanks::kProcesses;
  EXPECT_DOUBLE_EQ(four.host_collective_wait(), 1e-3);  // not measured: as threads
  four.host.processes_oversubscribed_wait = 3e-3;
  EXPECT_DOUBLE_EQ(four.host_collective_wait(), 3e-3);
  four.host_ranks = Topology::HostRanks::kTcp;
  EXPECT_DOUBLE_EQ(four.host_collective_wait(), 3e-3);
  four.host_ranks = Topology::HostRanks::kThreads;
  EXPECT_DOUBLE_EQ(four.host_collective_wait(), 1e-3);
  // It is a machine file's key, and cannot be negative.
  EXPECT_NE(four.to_file().find("processes_oversubscribed_wait = 0.003"), std::string::npos);
  four.apply_overrides("processes_oversubscribed_wait=5e-3");
  EXPECT_DOUBLE_EQ(four.host.processes_oversubscribed_wait, 5e-3);
  four.host.processes_oversubscribed_wait = -1;
  EXPECT_THROW(four.validate(), ValueError);
}

}  // namespace
}  // namespace mtf
