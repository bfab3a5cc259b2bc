// Combining calibrations of one host (tools/calibration_median.h): each
// figure the median of the calibrations', a product curve's figures kept
// together, and a clear error for nothing to combine; and how far the
// calibrations disagree (steadiness).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "calibration_median.h"
#include "expect_error.h"
#include "mtf/mtf.h"

namespace mtf {
namespace {

// A 2-CPU host whose rates are `speed` times round figures, and whose
// one-thread product curve is (peak, half, narrow).
Topology calibration(double speed, double peak, double half, double narrow) {
  Topology t;
  t.apply_overrides(
      "name=host,network=switched,nodes=1,devices_per_node=2,host_cpus=2,"
      "gemm_flops_all_cpus=180e9,gemm_half_flops_all_cpus=2e6,gemm_narrow_all_cpus=40,"
      "transcendental_cost=20,cache_bytes=1e6,step_overhead=1e-6,run_overhead=2e-6,"
      "threads_run_overhead=100e-6,node_link_bandwidth=5e9,node_link_latency=3e-6");
  t.set("gemm_flops", std::to_string(peak));
  t.set("gemm_half_flops", std::to_string(half));
  t.set("gemm_narrow", std::to_string(narrow));
  t.set("core_flops", std::to_string(10e9 * speed));
  t.set("chip_memory_bandwidth", std::to_string(20e9 * speed));
  t.set("cache_bandwidth", std::to_string(80e9 * speed));
  t.sources = "calibration at speed " + std::to_string(speed);
  return t;
}

TEST(CalibrationMedian, EachFigureIsTheMedianOfTheCalibrations) {
  // A slow phase, a fast one and one between: every rate from the middle
  // one, whichever order they came in.
  const std::vector<Topology> rounds = {calibration(0.6, 100e9, 1e5, 10),
                                        calibration(1.3, 140e9, 3e5, 20),
                                        calibration(1.0, 120e9, 2e5, 30)};
  const Topology m = tools::median_of_calibrations(rounds);
  EXPECT_DOUBLE_EQ(m.core_flops, 10e9);
  EXPECT_DOUBLE_EQ(m.chip_memory_bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(m.host.cache_bandwidth, 80e9);
  EXPECT_EQ(m.host_cpus, 2);
  EXPECT_EQ(m.sources, rounds.front().sources + " (each figure the median of 3 rounds)");
}

TEST(CalibrationMedian, AMedianOfMediansSaysSoOnce) {
  const Topology inner = tools::median_of_calibrations(
      {calibration(1, 100e9, 1e5, 10), calibration(1, 140e9, 3e5, 20)});
  const Topology outer =
      tools::median_of_calibrations({inner, calibration(1, 120e9, 2e5, 30), inner});
  EXPECT_EQ(outer.sources,
            "calibration at speed 1.000000 (each figure the median of 3 "
            "calibrations, some of them medians of rounds themselves)");
}

TEST(CalibrationMedian, AProductCurveComesWholeFromTheMedianPeak) {
  // Medians taken figure by figure would give (120e9, 2e5, 20), a curve no
  // calibration measured; the curve of the median peak keeps its own half
  // and narrow figures.
  const Topology m =
      tools::median_of_calibrations({calibration(1, 100e9, 1e5, 10), calibration(1, 140e9, 3e5, 20),
                                     calibration(1, 120e9, 2e5, 30)});
  EXPECT_DOUBLE_EQ(m.host.one_cpu.gemm_flops, 120e9);
  EXPECT_DOUBLE_EQ(m.host.one_cpu.gemm_half_flops, 2e5);
  EXPECT_DOUBLE_EQ(m.host.one_cpu.gemm_narrow, 30);
}

// The crowded ranks' wait and latency are fitted to one measured step at
// the bandwidth measured just before: the three come from the round whose
// wait plus latency (a one-message collective's cost) is the median.
TEST(CalibrationMedian, ACrowdedFitComesWholeFromOneRound) {
  auto crowded = [](double wait, double latency, double bandwidth) {
    Topology t = calibration(1, 120e9, 2e5, 30);
    for (const char* ranks : {"processes", "threads"}) {
      t.set(std::string(ranks) + "_oversubscribed_latency", std::to_string(latency));
      t.set(std::string(ranks) + "_oversubscribed_bandwidth", std::to_string(bandwidth));
    }
    t.set("oversubscribed_wait", std::to_string(wait));
    t.set("processes_oversubscribed_wait", std::to_string(wait));
    return t;
  };
  // One-message costs 400, 370 and 5 us: the second round's figures, where
  // figure by figure would give (70 us, 200 us, 0.8 GB/s), no round's fit.
  const Topology m = tools::median_of_calibrations(
      {crowded(200e-6, 200e-6, 0.75e9), crowded(70e-6, 300e-6, 3.3e9), crowded(0, 5e-6, 0.8e9)});
  EXPECT_DOUBLE_EQ(m.host.processes_oversubscribed_wait, 70e-6);
  EXPECT_DOUBLE_EQ(m.host.processes_oversubscribed_latency, 300e-6);
  EXPECT_DOUBLE_EQ(m.host.processes_oversubscribed_bandwidth, 3.3e9);
  EXPECT_DOUBLE_EQ(m.host.oversubscribed_wait, 70e-6);
  EXPECT_DOUBLE_EQ(m.host.threads_oversubscribed_latency, 300e-6);
  EXPECT_DOUBLE_EQ(m.host.threads_oversubscribed_bandwidth, 3.3e9);
}

// The busy ranks' factor, skew and spread split one run's time between
// them: they come from the round with the median factor.
TEST(CalibrationMedian, TheBusyRanksFiguresComeWholeFromOneRound) {
  auto busy = [](double factor, double skew, double spread) {
    Topology t = calibration(1, 120e9, 2e5, 30);
    t.host.busy_in_program = factor;
    t.host.collective_skew = skew;
    t.host.cpu_spread = spread;
    return t;
  };
  // The first round's, where figure by figure would give (1.0, 0.005,
  // 0.05), no round's.
  const Topology m = tools::median_of_calibrations(
      {busy(1.0, 0.004, 0.01), busy(0.9, 0.008, 0.2), busy(1.06, 0.005, 0.05)});
  EXPECT_DOUBLE_EQ(m.host.busy_in_program, 1.0);
  EXPECT_DOUBLE_EQ(m.host.collective_skew, 0.004);
  EXPECT_DOUBLE_EQ(m.host.cpu_spread, 0.01);
}

TEST(CalibrationMedian, OneCalibrationIsItselfAndNoneIsAnError) {
  const Topology one = calibration(0.7, 90e9, 1e5, 10);
  const Topology m = tools::median_of_calibrations({one});
  EXPECT_EQ(m.to_file(), one.to_file());
  testing::expect_error<ValueError>([] { tools::median_of_calibrations({}); },
                                    "no calibrations to combine");
}

// `calibration` with the figures steadiness reads: products on every CPU,
// bfloat16's speed-up and busy_in_program.
Topology with_figures(double peak, double bfloat16, double busy) {
  Topology t = calibration(1, peak, 1e5, 10);
  t.set("gemm_bfloat16_speedup", std::to_string(bfloat16));
  t.set("busy_in_program", std::to_string(busy));
  return t;
}

TEST(CalibrationSteadiness, GivesEachFiguresRangeAndTheWidestSpread) {
  const tools::Steadiness s = tools::steadiness_of_calibrations(
      {with_figures(100e9, 4, 1.1), with_figures(143e9, 6, 1.0), with_figures(120e9, 5, 1.05)});
  EXPECT_EQ(s.text,
            "matrix products on one thread 100 to 143 GFLOP/s (43%); on every CPU 180 to 180 "
            "GFLOP/s (0%); bfloat16 products on one thread 400 to 858 GFLOP/s (114%); ranks "
            "filling the CPUs (busy_in_program) 1 to 1.1 (10%)");
  EXPECT_NEAR(s.widest, 100 * (143e9 * 6 / 400e9 - 1), 1e-9);
}

TEST(CalibrationSteadiness, AFigureOneCalibrationLacksIsLeftOut) {
  // A host without measured products on every CPU (gemm_flops_all_cpus 0).
  Topology a = with_figures(100e9, 4, 1), b = with_figures(105e9, 4, 1);
  b.set("gemm_flops_all_cpus", "0");
  const tools::Steadiness s = tools::steadiness_of_calibrations({a, b});
  EXPECT_EQ(s.text.find("every CPU"), std::string::npos);
  EXPECT_NEAR(s.widest, 5, 1e-9);
}

TEST(CalibrationSteadiness, TheReportWarnsOnlyBeyondTheLimit) {
  const std::string steady =
      tools::steadiness_report({with_figures(100e9, 4, 1), with_figures(105e9, 4, 1)});
  EXPECT_EQ(steady.rfind("across the 2 calibrations: matrix products on one thread 100 to 105", 0),
            0u);
  EXPECT_EQ(steady.find("moved by up to"), std::string::npos);
  const std::string moving =
      tools::steadiness_report({with_figures(100e9, 4, 1), with_figures(130e9, 4, 1)});
  EXPECT_NE(moving.find("this machine's speed moved by up to 30% between calibrations"),
            std::string::npos);
  EXPECT_EQ(tools::steadiness_report({with_figures(100e9, 4, 1)}), "");
}

}  // namespace
}  // namespace mtf
