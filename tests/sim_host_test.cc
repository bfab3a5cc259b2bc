// Hosts (CPU machines as mtf-sim --calibrate describes them): their settings
// round-trip through machine files and fail clearly; the compute model
// shares CPUs between ranks and BLAS threads as the executor does; a
// simulated host runs the fused, planned program the executor runs; and
// ranks as processes use the process link.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "expect_error.h"
#include "mtf/mtf.h"
#include "sim_host_util.h"
#include "test_util.h"

namespace mtf {
namespace {

// A variable of 8 images of side x side with `channels` channels.
Tensor images(Mesh& mesh, const char* name, int64_t side, int64_t channels) {
  return get_variable(mesh, name,
                      Shape({Dimension{"b", 8}, Dimension{"h", side}, Dimension{"w", side},
                             Dimension{"c", channels}}));
}

TEST(SimHost, SettingsRoundTripThroughAMachineFile) {
  Topology t = host(2);
  t.host_ranks = Topology::HostRanks::kProcesses;
  t.sources = "measured here";
  const std::string path = ::testing::TempDir() + "host_roundtrip.machine";
  {
    std::ofstream out(path);
    out << t.to_file();
  }
  Topology back;
  back.load_file(path);
  EXPECT_EQ(back.to_file(), t.to_file());
  EXPECT_EQ(back.host_cpus, 2);
  EXPECT_EQ(back.host_ranks, Topology::HostRanks::kProcesses);
  EXPECT_DOUBLE_EQ(back.host.all_cpus.gemm_half_flops, 2e6);
  EXPECT_EQ(back.sources, "measured here");
  std::remove(path.c_str());
}

TEST(SimHost, BadSettingsNameTheKey) {
  Topology t;
  testing::expect_error<ValueError>([&] { t.set("host_ranks", "fibers"); },
                                    {"host_ranks", "processes"});
  EXPECT_THROW(t.set("gemm_half_flops", "-1"), ValueError);
  EXPECT_THROW(t.set("host_cpus", "-2"), ValueError);
  EXPECT_THROW(t.set("process_link_bandwidth", "0"), ValueError);
}

TEST(SimHost, MissingHostPresetSaysHowToMakeIt) {
  const char* old = std::getenv("MTF_HOST_MACHINE");
  const std::string saved = old ? old : "";
  setenv("MTF_HOST_MACHINE", "/nonexistent/dir/host.machine", 1);
  testing::expect_error<IoError>([&] { Topology::preset("host"); },
                                 {"mtf-sim --calibrate /nonexistent/dir/host.machine"});
  if (old)
    setenv("MTF_HOST_MACHINE", saved.c_str(), 1);
  else
    unsetenv("MTF_HOST_MACHINE");
}

TEST(SimHost, ProductsUseTheThreadsARankGets) {
  // One rank on 2 CPUs: a large product on both threads; a small one (m*n*k
  // under OpenBLAS's threshold) on one.
  const Topology one = host(1), two = host(2), four = host(4);
  const double big = 1024;
  EXPECT_NEAR(one.host_gemm_seconds(big, big, big),
              (2 * big * big * big + 2e6) / 180e9 * (1 + 40 / big), 1e-12);
  EXPECT_NEAR(one.host_gemm_seconds(32, 32, 32),
              (2.0 * 32 * 32 * 32 + 1e5) / 100e9 * (1 + 10 / 32.), 1e-15);
  // Two ranks on 2 CPUs: a thread each.
  EXPECT_NEAR(two.host_gemm_seconds(big, big, big),
              (2 * big * big * big + 1e5) / 100e9 * (1 + 10 / big), 1e-12);
  // A narrow side costs more than a square product of the same flops.
  EXPECT_GT(two.host_gemm_seconds(100, 1024, 10), two.host_gemm_seconds(100, 100, 102.4));
  // Four ranks on 2 CPUs take turns: every step twice as long.
  EXPECT_NEAR(four.host_step_seconds(1e-3), 2 * (1e-6 + 1e-3), 1e-12);
  EXPECT_NEAR(two.host_step_seconds(1e-3), 1e-6 + 1e-3, 1e-12);
  // Elementwise work: cache or memory bandwidth, or arithmetic; two ranks
  // computing at once keep half the cache each.
  EXPECT_NEAR(two.host_elementwise_seconds(1e3, 4e5), 4e5 / 80e9, 1e-15);
  EXPECT_NEAR(two.host_elementwise_seconds(1e3, 8e5), 8e5 / 20e9, 1e-15);
  EXPECT_NEAR(one.host_elementwise_seconds(1e3, 8e5), 8e5 / 80e9, 1e-15);
  EXPECT_NEAR(two.host_elementwise_seconds(1e3, 8e6), 8e6 / 20e9, 1e-15);
  EXPECT_NEAR(two.host_elementwise_seconds(1e9, 8e6), 1e9 / 10e9, 1e-15);
}

TEST(SimHost, ProgramFactorsAndCrowdedLinksApplyWhereTheyBelong) {
  Topology one = host(1), two = host(2), four = host(4);
  for (Topology* t : {&one, &two, &four}) {
    t->host.one_cpu.gemm_in_program = 1.2;
    t->host.all_cpus.gemm_in_program = 0.9;
    t->host.one_cpu.elementwise_in_program = 1.5;
    t->host.one_cpu.elementwise_step_overhead = 1e-6;
    t->host.all_cpus.elementwise_in_program = 2.0;
    t->host.all_cpus.elementwise_step_overhead = 2e-6;
    t->host.oversubscribed_in_program = 1.25;
    t->host.threads_oversubscribed_bandwidth = 2e9;
    t->host.threads_oversubscribed_latency = 9e-6;
  }
  // A rank with both CPUs: the all-CPU factors; with one CPU: the others.
  EXPECT_NEAR(one.host_elementwise_seconds(0, 8e5), 8e5 / 80e9 * 2.0 + 2e-6, 1e-15);
  EXPECT_NEAR(two.host_elementwise_seconds(0, 4e5), 4e5 / 80e9 * 1.5 + 1e-6, 1e-15);
  const double big = 1024;
  EXPECT_NEAR(one.host_gemm_seconds(big, big, big),
              (2 * big * big * big + 2e6) / 180e9 * (1 + 40 / big) * 0.9, 1e-12);
  EXPECT_NEAR(two.host_gemm_seconds(big, big, big),
              (2 * big * big * big + 1e5) / 100e9 * (1 + 10 / big) * 1.2, 1e-12);
  // More ranks than CPUs: turns, their cost, and the crowded links.
  EXPECT_NEAR(four.host_step_seconds(1e-3), 2 * (1e-6 + 1e-3) * 1.25, 1e-12);
  EXPECT_NEAR(two.host_step_seconds(1e-3), 1e-6 + 1e-3, 1e-12);
  EXPECT_DOUBLE_EQ(four.fabric_bandwidth(), 2e9);
  EXPECT_DOUBLE_EQ(four.fabric_latency(), 9e-6);
  EXPECT_DOUBLE_EQ(two.fabric_bandwidth(), 5e9);
  four.host_ranks = Topology::HostRanks::kProcesses;  // no crowded figures for processes
  EXPECT_DOUBLE_EQ(four.fabric_bandwidth(), 8e9);
  // Processes over TCP only: their own link.
  four.set("host_ranks", "tcp");
  four.host.tcp_link_bandwidth = 1e9;
  four.host.tcp_link_latency = 11e-6;
  EXPECT_DOUBLE_EQ(four.fabric_bandwidth(), 1e9);
  EXPECT_DOUBLE_EQ(four.fabric_latency(), 11e-6);
  EXPECT_STREQ(four.host_ranks_name(), "tcp");
  EXPECT_NE(four.to_file().find("host_ranks = tcp"), std::string::npos);
}

// Cold operands cost bytes, not flops: an einsum step in a program takes
// its products' flop time plus its operands' and result's bytes at the
// calibrated cost per byte (the threads' share of the one-thread and
// all-CPU figures), once per step however many calls share an operand, so
// the slowdown fades as a product does more work per byte; a product bound
// by its bytes streams them already. Machine files keep the figures.
TEST(SimHost, ProductsPayTheirColdOperandBytesOnce) {
  Topology one = host(1), two = host(2);
  for (Topology* t : {&one, &two}) {
    t->host.one_cpu.gemm_cold_seconds_per_byte = 1e-10;
    t->host.all_cpus.gemm_cold_seconds_per_byte = 0.5e-10;
  }
  EXPECT_DOUBLE_EQ(two.host_cold_operand_seconds(1e6), 1e-4);
  EXPECT_DOUBLE_EQ(one.host_cold_operand_seconds(1e6), 0.5e-4);
  // One step of 8 heads' products from one input, [2048, 256] x [256, 8, 32]:
  // the input is read cold once.
  auto einsum_seconds = [](const Topology& topo, int64_t rows, int64_t heads, int64_t depth) {
    Graph g;
    Mesh mesh(g, "m");
    const Dimension r{"r", rows}, d{"d", 256}, h{"h", heads}, k{"k", depth};
    const Tensor x = get_variable(mesh, "x", Shape({r, d}));
    const Tensor w = get_variable(mesh, "w", Shape({d, h, k}));
    const Tensor y = einsum({x, w}, Shape({h, r, k}));
    Session s(g, cost_only(topo));
    s.run({y});
    for (const SimReport::OpRow& row : s.simulation_report().ops)
      if (row.op == y.op().name()) return row.time;
    return -1.0;
  };
  // (A mesh of one processor: one rank with both CPUs, the all-CPU cost.)
  const Topology bare = host(1);
  const double step_bytes = 4.0 * (2048 * 256 + 256 * 8 * 32 + 8 * 2048 * 32);
  EXPECT_NEAR(einsum_seconds(one, 2048, 8, 32) - einsum_seconds(bare, 2048, 8, 32),
              step_bytes * 0.5e-10, 1e-9);
  // The share of the time fades with the work per byte.
  const double narrow = einsum_seconds(one, 2048, 8, 32) / einsum_seconds(bare, 2048, 8, 32);
  const double wide = einsum_seconds(one, 2048, 8, 512) / einsum_seconds(bare, 2048, 8, 512);
  EXPECT_GT(narrow, wide);
  EXPECT_GT(wide, 1);
  // A matrix-vector product bound by its bytes: no more.
  Topology streaming = one, streaming_bare = bare;
  streaming.apply_overrides("gemm_memory_bandwidth=1e9,gemm_memory_bandwidth_all_cpus=1e9");
  streaming_bare.apply_overrides("gemm_memory_bandwidth=1e9,gemm_memory_bandwidth_all_cpus=1e9");
  EXPECT_DOUBLE_EQ(einsum_seconds(streaming, 1, 8, 32), einsum_seconds(streaming_bare, 1, 8, 32));
  const std::string path = ::testing::TempDir() + "cold_bytes.machine";
  {
    std::ofstream out(path);
    out << two.to_file();
  }
  Topology back;
  back.load_file(path);
  std::remove(path.c_str());
  EXPECT_DOUBLE_EQ(back.host.one_cpu.gemm_cold_seconds_per_byte, 1e-10);
  EXPECT_DOUBLE_EQ(back.host.all_cpus.gemm_cold_seconds_per_byte, 0.5e-10);
  EXPECT_THROW(back.set("gemm_cold_seconds_per_byte", "-1e-10"), ValueError);
}

// The terms the validation's rows needed: bfloat16 products at their own
// rate, matrix-vector products bound by their bytes (cache or memory by
// their size), fused chains and convolutions with their own factors, and
// random draws weighted; and their keys in machine files.
TEST(SimHost, BFloat16MatrixVectorFusedAndConvolutionTerms) {
  Topology one = host(1), two = host(2);
  for (Topology* t : {&one, &two}) {
    t->apply_overrides(
        "gemm_bfloat16_speedup=2,gemm_bfloat16_speedup_all_cpus=1.5,"
        "gemm_memory_bandwidth=10e9,gemm_memory_bandwidth_all_cpus=20e9,"
        "gemm_cache_bandwidth=40e9,gemm_cache_bandwidth_all_cpus=50e9,fused_in_program=3,"
        "fused_step_overhead=4e-6,conv_in_program=2.5,conv_in_program_all_cpus=0.8,"
        "pool_in_program=3.5,pool_in_program_all_cpus=2.5,pool_grad_in_program=5,"
        "pool_grad_in_program_all_cpus=4,"
        "random_cost=18,gemm_narrow=0,gemm_narrow_all_cpus=0");
  }
  const double big = 1024;
  const double f32 = two.host_gemm_seconds(big, big, big);
  EXPECT_NEAR(two.host_gemm_seconds(big, big, big, DType::kBFloat16), f32 / 2, 1e-12);
  EXPECT_NEAR(one.host_gemm_seconds(big, big, big, DType::kBFloat16),
              one.host_gemm_seconds(big, big, big) / 1.5, 1e-12);
  // [1, 2048] x [2048, 2048]: 16 MiB of matrix at memory's rate, on the
  // threads the rank gets (both for one rank).
  const double matrix = 4.0 * (2048 + 2048 * 2048 + 2048);
  EXPECT_NEAR(two.host_gemm_seconds(1, 2048, 2048), matrix / 10e9, 1e-12);
  EXPECT_NEAR(one.host_gemm_seconds(1, 2048, 2048), matrix / 20e9, 1e-12);
  // Half the bytes in bfloat16.
  EXPECT_NEAR(two.host_gemm_seconds(1, 2048, 2048, DType::kBFloat16), matrix / 2 / 10e9, 1e-12);
  // [1, 256] x [256, 512]: half a MiB, within the cache's rate.
  EXPECT_NEAR(two.host_gemm_seconds(1, 512, 256), 4.0 * (256 + 256 * 512 + 512) / 40e9, 1e-12);
  // A narrow-side slowdown is not extrapolated below the narrowest side the
  // calibration fits (10): a matrix-vector product stays bound by its bytes.
  Topology narrow = two;
  narrow.apply_overrides("gemm_narrow=30");
  EXPECT_NEAR(narrow.host_gemm_seconds(1, 2048, 2048), matrix / 10e9, 1e-12);
  // Products that do enough work per byte keep their flop time.
  EXPECT_GT(f32, 4.0 * 3 * big * big / 10e9);
  // Fused chains: their own factor and cost per step; others unchanged.
  EXPECT_NEAR(two.host_elementwise_seconds(0, 4e5, true), 4e5 / 80e9 * 3 + 4e-6, 1e-15);
  EXPECT_NEAR(two.host_elementwise_seconds(0, 4e5, false), 4e5 / 80e9, 1e-15);
  EXPECT_DOUBLE_EQ(two.host_conv_factor(), 2.5);
  EXPECT_DOUBLE_EQ(one.host_conv_factor(), 0.8);
  EXPECT_DOUBLE_EQ(two.host_pool_factor(false), 3.5);
  EXPECT_DOUBLE_EQ(one.host_pool_factor(false), 2.5);
  EXPECT_DOUBLE_EQ(two.host_pool_factor(true), 5);
  EXPECT_DOUBLE_EQ(one.host_pool_factor(true), 4);
  Topology back;
  back.apply_overrides("name=back");
  for (const char* key :
       {"gemm_bfloat16_speedup = 2", "gemm_memory_bandwidth_all_cpus = 2e+10",
        "gemm_cache_bandwidth = 4e+10", "fused_in_program = 3", "conv_in_program_all_cpus = 0.8",
        "pool_in_program = 3.5", "random_cost = 18"})
    EXPECT_NE(two.to_file().find(key), std::string::npos) << key;
  EXPECT_THROW(back.set("gemm_bfloat16_speedup", "0"), ValueError);
  EXPECT_THROW(back.set("random_cost", "-1"), ValueError);
  testing::expect_error<ValueError>([&] { back.set("pool_in_program", "0"); },
                                    {"pool_in_program", "positive"});
  testing::expect_error<ValueError>([&] { back.set("conv_in_program_all_cpus", "0"); },
                                    {"conv_in_program_all_cpus", "positive"});
  // Each refused value left the figure as it was.
  EXPECT_DOUBLE_EQ(back.host.random_cost, 1);
  EXPECT_DOUBLE_EQ(back.host.one_cpu.pool_in_program, 1);
}

// Random draws cost random_cost flops an element: a graph that draws costs
// more than one that adds the same elements, and the in-program factor of
// bandwidth-bound steps does not scale them.
TEST(SimHost, RandomDrawsCostTheirCalibratedFlops) {
  auto step_of = [](bool draw, const char* factor = "elementwise_in_program=1") {
    Graph g;
    Mesh mesh(g, "m");
    const Shape shape({Dimension{"x", 1 << 16}});
    const Tensor v = get_variable(mesh, "v", shape);
    Operation* write = assign(v, draw ? random_uniform(mesh, shape) : v + v);
    MeshConfig mc = cost_only(host(1));
    mc.sim->topology.apply_overrides(std::string("random_cost=50,") + factor);
    Session s(g, mc);
    s.run(std::vector<Tensor>{}, {}, {write});
    return s.simulation_report().step_time;
  };
  // 64K draws at 50 flops each on a 10 GFLOP/s core: about 0.33 ms.
  EXPECT_GT(step_of(true), 0.3e-3);
  EXPECT_LT(step_of(false), 0.1e-3);
  const char* half = "elementwise_in_program=0.5,elementwise_in_program_all_cpus=0.5";
  EXPECT_GT(step_of(true, half), 0.3e-3);
  EXPECT_LT(step_of(false, half), step_of(false));
}

// A step whose kernel shares its work among OpenMP threads (a program with
// no float32 product on OpenBLAS, or a bfloat16 step) is timed with the
// one-thread factors, its roofline divided among the rank's threads; beside
// a float32 product the same chain runs on one thread, at the all-CPU
// factors.
TEST(SimHost, StepsSplitOverThreadsCostTheirShare) {
  // The time of the chain exp(v) * v (one fused step, named by its last op).
  auto chain_time = [](bool beside_a_product) {
    Graph g;
    Mesh mesh(g, "m");
    const Tensor v = get_variable(mesh, "v", Shape({Dimension{"x", 1 << 20}}));
    const Dimension i{"i", 64}, j{"j", 64}, k{"k", 64};
    const Tensor a = get_variable(mesh, "a", Shape({i, j}));
    const Tensor b = get_variable(mesh, "b", Shape({j, k}));
    const Tensor c = get_variable(mesh, "c", Shape({i, k}));
    std::vector<Operation*> writes = {assign(v, exp(v) * v)};
    if (beside_a_product) writes.push_back(assign(c, einsum({a, b}, c.shape())));
    MeshConfig mc = cost_only(host(1));
    mc.sim->topology.apply_overrides(
        "elementwise_in_program=1,elementwise_in_program_all_cpus=1.5,fused_in_program=1,"
        "fused_in_program_all_cpus=1.5");
    Session s(g, mc);
    s.run(std::vector<Tensor>{}, {}, writes);
    for (const SimReport::OpRow& row : s.simulation_report().ops)
      if (row.op == "multiply") return row.time;
    ADD_FAILURE() << "no step named multiply";
    return 0.0;
  };
  // 1M exps at 20 flops on a 10 GFLOP/s core: 2 ms on one thread, at 1.5x
  // beside a product; shared by two threads at 1x alone, a third of that.
  const double alone = chain_time(false), beside = chain_time(true);
  EXPECT_NEAR(beside, 3e-3, 0.5e-3);
  EXPECT_NEAR(alone / beside, 1.0 / 3, 0.02);
}

// Tiny float32 products on one thread take OpenBLAS's per-call time and
// their flops at the small kernels' rate when that is less than the curve,
// which counts each about gemm_half_flops / gemm_flops (1 us here).
TEST(SimHost, TinyProductsCostTheirCallsNotTheCurve) {
  Topology plain = host(2), small = host(2);
  small.apply_overrides("gemm_call_seconds=80e-9,gemm_small_flops=40e9");
  EXPECT_NEAR(small.host_gemm_seconds(4, 1, 1), 80e-9 + 8 / 40e9, 1e-15);
  EXPECT_NEAR(plain.host_gemm_seconds(4, 1, 1), (8 + 1e5) / 100e9 * (1 + 10 / 10.), 1e-15);
  // Where the curve is less (a 64^3 product: 2.6 us against 6.6), the curve.
  EXPECT_DOUBLE_EQ(small.host_gemm_seconds(64, 64, 64), plain.host_gemm_seconds(64, 64, 64));
  // Products that OpenBLAS shares out, and bfloat16's, keep their curves.
  EXPECT_DOUBLE_EQ(small.host_gemm_seconds(1024, 1024, 1024),
                   plain.host_gemm_seconds(1024, 1024, 1024));
  EXPECT_DOUBLE_EQ(small.host_gemm_seconds(4, 1, 1, DType::kBFloat16),
                   plain.host_gemm_seconds(4, 1, 1, DType::kBFloat16));
  // A negative value is refused and leaves the figure as it was.
  EXPECT_THROW(small.set("gemm_call_seconds", "-1e-9"), ValueError);
  EXPECT_DOUBLE_EQ(small.host.gemm_call_seconds, 80e-9);
  const std::string path = ::testing::TempDir() + "small_products.machine";
  std::ofstream(path) << small.to_file();
  Topology back;
  back.load_file(path);
  std::remove(path.c_str());
  EXPECT_DOUBLE_EQ(back.host.gemm_call_seconds, 80e-9);
  EXPECT_DOUBLE_EQ(back.host.gemm_small_flops, 40e9);

  // A mixture of experts' gating: 2048 products of [4,64] by [64] in one
  // einsum step, 2 us on the curve and 0.2 ms with the small kernels.
  auto step_of = [](const Topology& t) {
    Graph g;
    Mesh mesh(g, "m");
    const Dimension groups{"g", 2048}, experts{"e", 4}, model{"d", 64};
    const Tensor x = get_variable(mesh, "x", Shape({groups, experts, model}));
    const Tensor y = get_variable(mesh, "y", Shape({groups, model}));
    const Tensor out = get_variable(mesh, "out", Shape({groups, experts}));
    Operation* write = assign(out, einsum({x, y}, Shape({groups, experts})));
    Session s(g, cost_only(t));
    s.run(std::vector<Tensor>{}, {}, {write});
    return s.simulation_report().step_time;
  };
  EXPECT_GT(step_of(plain), 2e-3);
  EXPECT_LT(step_of(small), 0.5e-3);
}

// An einsum that contracts nothing (a gradient's dy * mask) runs without
// BLAS: it costs its bytes at memory's rate, not a square product's flops.
TEST(SimHost, BroadcastProductsCostTheirBytes) {
  Graph g;
  Mesh mesh(g, "m");
  const Shape shape({Dimension{"a", 1024}, Dimension{"b", 1024}});
  const Tensor x = get_variable(mesh, "x", shape), y = get_variable(mesh, "y", shape);
  Operation* write = assign(x, einsum({x, y}, shape));
  Session s(g, cost_only(host(1)));
  s.run(std::vector<Tensor>{}, {}, {write});
  // 12 MiB (two operands and the product) at 20 GB/s: 0.63 ms; a square
  // product of its 2M flops would take 0.02 ms.
  EXPECT_GT(s.simulation_report().step_time, 0.6e-3);
}

// Pooling steps take their roofline times pool_in_program, whatever the
// elementwise factor (the reference CNN measures them apart).
TEST(SimHost, PoolingCostsItsOwnFactor) {
  auto step_of = [](const char* factors) {
    Graph g;
    Mesh mesh(g, "m");
    // [8, 64, 64, 32] floats: 4 MiB in, 1 MiB out.
    const Tensor x = images(mesh, "x", 64, 32), y = images(mesh, "y", 32, 32);
    Operation* write = assign(y, max_pool(x, {2, 2}));
    MeshConfig mc = cost_only(host(1));
    mc.sim->topology.apply_overrides(factors);
    Session s(g, mc);
    s.run(std::vector<Tensor>{}, {}, {write});
    return s.simulation_report().step_time;
  };
  const double base = step_of("pool_in_program=1,elementwise_in_program=1");
  const double slow_pool = step_of(
      "pool_in_program=12,pool_in_program_all_cpus=12,"
      "elementwise_in_program=1");
  // 5 MiB: 0.26 ms at the memory's 20 GB/s; at the cache's rates its 1 Mi
  // comparisons (0.1 ms at 10 GFLOP/s) pace it, 1.26 ms with a factor of
  // 12: 1 ms more.
  EXPECT_GT(slow_pool - base, 0.99e-3);
  EXPECT_LT(slow_pool - base, 1.01e-3);
  // A factor of 2 paces it at 0.21 ms: the memory's rate bounds it.
  EXPECT_NEAR(step_of("pool_in_program=2,pool_in_program_all_cpus=2,elementwise_in_program=1"),
              base, 1e-9);
  // The elementwise factor leaves the pooling step alone (the assign's
  // copy of 1 MiB is all it scales: 0.05 ms a unit).
  const double slow_elementwise =
      step_of("pool_in_program=1,elementwise_in_program=2,elementwise_in_program_all_cpus=2");
  EXPECT_LT(slow_elementwise - base, 0.15e-3);
}

// The in-program factors are measured on steps that fit the cache: they
// pace a step at the cache's rates, and beyond the cache the memory's
// rate bounds it only where that is slower.
TEST(SimHost, FactorsPaceAStepAtTheCachesRatesAndTheMemoryBoundsIt) {
  Topology one = host(1), two = host(2);
  // In the cache (1 MB): the factor times the roofline, as before.
  EXPECT_NEAR(one.host_paced_seconds(0, 8e5, 3), 3 * 8e5 / 80e9, 1e-15);
  EXPECT_NEAR(one.host_paced_seconds(8e6, 8e5, 3), 3 * 8e6 / 10e9, 1e-15);
  // Beyond it: 8 MB at the memory's 20 GB/s (0.4 ms) bounds a factor of 3
  // (0.3 ms at the cache's rate); a factor of 5 (0.5 ms) is its own pace.
  EXPECT_NEAR(one.host_paced_seconds(0, 8e6, 3), 8e6 / 20e9, 1e-15);
  EXPECT_NEAR(one.host_paced_seconds(0, 8e6, 5), 5 * 8e6 / 80e9, 1e-15);
  // Factor 1 is the plain roofline.
  EXPECT_DOUBLE_EQ(one.host_paced_seconds(0, 8e6, 1), one.host_roofline_seconds(0, 8e6));
  // Two ranks at once: half the cache each, and the memory's busy rate.
  two.host.memory_bandwidth_busy = 8e9;
  EXPECT_NEAR(two.host_paced_seconds(0, 8e5, 3), 8e5 / 8e9, 1e-15);
  EXPECT_NEAR(two.host_paced_seconds(0, 8e5, 20), 20 * 8e5 / 80e9, 1e-15);
  // Elementwise steps go through it: a chain of 8 MB with factor 5.
  one.host.one_cpu.elementwise_in_program = one.host.all_cpus.elementwise_in_program = 5;
  EXPECT_NEAR(one.host_elementwise_seconds(0, 8e6), 5 * 8e6 / 80e9, 1e-15);
  // No cache rate measured (an old machine file): the memory's rate paces.
  one.host.cache_bandwidth = 0;
  EXPECT_NEAR(one.host_paced_seconds(0, 8e6, 3), 3 * 8e6 / 20e9, 1e-15);
}

// A convolution split by rows: its halo step zeroes the windowed slice and
// copies the rank's rows and the neighbours' into it, which costs that
// memory traffic beside the messages (on hosts; the presets' accelerators
// leave it to their compiler).
TEST(SimHost, HaloStepsCostTheirCopies) {
  auto halo_seconds = [](Topology topo, const char* mesh_shape = "r:2") {
    Graph g;
    Mesh mesh(g, "m");
    // [8, 64, 64, 32] floats split over 2 by rows: 2 MiB a rank, 2.125 MiB
    // with the window's two rows.
    const Tensor x = images(mesh, "x", 64, 32);
    const Tensor f = get_variable(
        mesh, "f",
        Shape({Dimension{"fh", 3}, Dimension{"fw", 3}, Dimension{"c", 32}, Dimension{"d", 32}}));
    const Tensor y = conv(x, f);
    Session s(g, cost_only(topo, mesh_shape, "h:r"));
    s.run({y}, {}, {});
    const SimReport r = s.simulation_report();
    return r.per_core.at(0).communication;
  };
  // 2 MiB read, 2.125 MiB written twice: 6.55 MB at 20 GB/s, 0.33 ms; the
  // messages (a row of 64 KiB each way at 5 GB/s) add 0.02 ms.
  const double at_20 = halo_seconds(host(2));
  EXPECT_GT(at_20, 0.33e-3);
  EXPECT_LT(at_20, 0.36e-3);
  Topology faster = host(2);
  faster.chip_memory_bandwidth = 40e9;
  EXPECT_NEAR(halo_seconds(faster), at_20 - 0.164e-3, 0.005e-3);
  // A preset's halo is its messages alone (over 8 cores: 0.5 MiB a slice;
  // its copies at 1 GB/s would take 1.8 ms).
  Topology tpu = Topology::preset("tpu-v3-8");
  tpu.chip_memory_bandwidth = 1e9;
  EXPECT_LT(halo_seconds(tpu, "r:8"), 0.1e-3);
}

TEST(SimHost, PoolingStepsAreClassifiedByOpType) {
  EXPECT_EQ(pooling_step("max_pool"), PoolingStep::kPool);
  EXPECT_EQ(pooling_step("avg_pool"), PoolingStep::kPool);
  EXPECT_EQ(pooling_step("max_pool_grad"), PoolingStep::kGradient);
  EXPECT_EQ(pooling_step("avg_pool_grad"), PoolingStep::kGradient);
  EXPECT_EQ(pooling_step("conv"), PoolingStep::kNone);
  EXPECT_EQ(pooling_step("relu_grad"), PoolingStep::kNone);
}

TEST(SimHost, RunsTheFusedProgramAndAddsTheRunsOverhead) {
  const SimReport fused = simulate_mlp(host(1), "all:1", "");
  const SimReport unfused = simulate_mlp(host(1), "all:1", "", false);
  // Fewer steps (each with its overhead) and less traffic when fused.
  EXPECT_LT(fused.step_time, unfused.step_time);
  EXPECT_LT(fused.ops.size(), unfused.ops.size());
  // The run's own overhead is in the step time: 2 us for one rank.
  Topology slow = host(1);
  slow.host.run_overhead = 1e-3;
  EXPECT_NEAR(simulate_mlp(slow, "all:1", "").step_time - fused.step_time, 1e-3 - 2e-6, 1e-9);
  // Utilization is measured against the matrix products' peak, not core_flops.
  EXPECT_GT(fused.utilization, 0);
  EXPECT_LT(fused.utilization, 1);
}

TEST(SimHost, ProcessesTalkOverTheProcessLink) {
  Topology threads = host(2), processes = host(2);
  processes.host_ranks = Topology::HostRanks::kProcesses;
  // Make the links the only difference that matters.
  threads.host.threads_run_overhead = threads.host.run_overhead;
  const SimReport a = simulate_mlp(threads, "b:2", "batch:b");
  const SimReport b = simulate_mlp(processes, "b:2", "batch:b");
  EXPECT_GT(a.mean_communication(), b.mean_communication());  // 5 GB/s against 8
  processes.host.process_link_bandwidth = 5e9;
  processes.host.process_link_latency = 3e-6;
  EXPECT_NEAR(simulate_mlp(processes, "b:2", "batch:b").step_time, a.step_time, 1e-12);
}

}  // namespace
}  // namespace mtf
