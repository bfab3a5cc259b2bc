// How this machine's speed moves from one second to the next
// (tools/speed_states.h, tools/speed_watch.h): each CPU's rates split into a
// fast and a slow level, how long a level held, how often every CPU was fast
// at once, the report's verdict, and clear errors for what cannot be split
// or watched.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect_error.h"
#include "mtf/mtf.h"
#include "speed_states.h"
#include "speed_watch.h"

namespace mtf {
namespace {

using tools::SpeedWatch;
using tools::TwoLevels;

// `n` instants at `rate`, each off by up to `jitter` (a fixed pattern).
std::vector<double> level(int n, double rate, double jitter = 0) {
  std::vector<double> r;
  for (int i = 0; i < n; ++i) r.push_back(rate + jitter * ((i % 3) - 1));
  return r;
}

std::vector<double> joined(std::vector<std::vector<double>> parts) {
  std::vector<double> r;
  for (const auto& p : parts) r.insert(r.end(), p.begin(), p.end());
  return r;
}

TEST(SpeedStates, SplitsTwoLevelsAndTimesHowLongEachHeld) {
  // Fast for 3 s, slow for 2, fast for 3, slow for 2 (instants 0.5 s apart).
  const std::vector<double> rates =
      joined({level(6, 100, 2), level(4, 50, 2), level(6, 100, 2), level(4, 50, 2)});
  const TwoLevels t = tools::two_levels(rates, 0.5);
  EXPECT_NEAR(t.fast, 100, 2);
  EXPECT_NEAR(t.slow, 50, 2);
  EXPECT_DOUBLE_EQ(t.fast_share, 0.6);
  EXPECT_DOUBLE_EQ(t.hold_seconds, 2.5);  // 10 s in 4 runs of one level
  EXPECT_NEAR(t.spread_percent(), 100, 10);
  ASSERT_EQ(t.at_fast.size(), rates.size());
  EXPECT_TRUE(t.at_fast[0]);
  EXPECT_FALSE(t.at_fast[6]);
  EXPECT_TRUE(t.at_fast[10]);
}

TEST(SpeedStates, RatesAlikeAreOneLevelHeldAllAlong) {
  const TwoLevels t = tools::two_levels(level(8, 120), 0.25);
  EXPECT_DOUBLE_EQ(t.fast, 120);
  EXPECT_DOUBLE_EQ(t.slow, 120);
  EXPECT_DOUBLE_EQ(t.fast_share, 1);
  EXPECT_DOUBLE_EQ(t.hold_seconds, 2);
  EXPECT_DOUBLE_EQ(t.spread_percent(), 0);
  const TwoLevels one = tools::two_levels({42}, 1);
  EXPECT_DOUBLE_EQ(one.fast, 42);
  EXPECT_DOUBLE_EQ(one.fast_share, 1);
}

TEST(SpeedStates, AllFastAtOnceCountsTheInstantsEveryCpuWasFast) {
  // CPU 0 fast at instants 0-3, CPU 1 at 2-5, of 8.
  const TwoLevels a = tools::two_levels(joined({level(4, 100), level(4, 40)}), 1);
  const TwoLevels b = tools::two_levels(joined({level(2, 40), level(4, 100), level(2, 40)}), 1);
  EXPECT_DOUBLE_EQ(tools::all_fast_share({a, b}), 0.25);
  EXPECT_DOUBLE_EQ(tools::all_fast_share({a}), 0.5);
  const TwoLevels shorter = tools::two_levels(level(3, 100), 1);
  testing::expect_error<ValueError>(
      [&] {
        tools::all_fast_share({a, shorter});
      },
      {"8 and 3 instants", "sample them together"});
}

TEST(SpeedStates, RefusesWhatCannotBeSplit) {
  testing::expect_error<ValueError>([] { tools::two_levels({}, 1); }, {"no rates"});
  testing::expect_error<ValueError>(
      [] {
        tools::two_levels({100, 0, 90}, 1);
      },
      {"instant 1", "positive"});
  testing::expect_error<ValueError>(
      [] {
        tools::two_levels({100, 90}, 0);
      },
      {"interval", "positive"});
}

TEST(SpeedStates, ReportSaysASteadyMachineCanCheckPredictions) {
  SpeedWatch w;
  w.cpus = {0, 1};
  w.interval = 0.25;
  w.float32 = {level(8, 140, 1), level(8, 138, 1)};
  w.bfloat16 = {level(8, 900, 5), level(8, 890, 5)};
  const std::string r = tools::speed_states_report(w);
  EXPECT_NE(r.find("watched 2 CPUs for 2 s"), std::string::npos) << r;
  EXPECT_NE(r.find("CPU 1: float32 products"), std::string::npos) << r;
  EXPECT_NE(r.find("steady: every CPU's levels within 10%"), std::string::npos) << r;
  EXPECT_EQ(r.find("cannot be checked"), std::string::npos) << r;
}

TEST(SpeedStates, ReportSaysHowFarATwoSpeedMachineMoves) {
  SpeedWatch w;
  w.cpus = {0, 1};
  w.interval = 1;
  w.float32 = {joined({level(4, 140), level(4, 100)}), joined({level(4, 100), level(4, 140)})};
  w.bfloat16 = {joined({level(4, 900), level(4, 360)}), joined({level(4, 360), level(4, 900)})};
  const std::string r = tools::speed_states_report(w);
  EXPECT_NE(r.find("CPU 0: float32 products 140 or 100 GFLOP/s (fast 50% of the time, a level "
                   "held 4 s on average; 40% apart)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("bfloat16 products 900 or 360 GFLOP/s"), std::string::npos) << r;
  // Never both fast at once, where CPUs moving on their own would be 25%.
  EXPECT_NE(r.find("every CPU fast at once: float32 0% of the time (25% were each CPU to move on "
                   "its own)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("moved by up to 150%"), std::string::npos) << r;
  EXPECT_NE(r.find("cannot be checked to 10% here"), std::string::npos) << r;
  w.bfloat16.pop_back();
  testing::expect_error<ValueError>([&] { tools::speed_states_report(w); },
                                    {"one float32 and one bfloat16 series per CPU"});
}

TEST(SpeedWatch, RefusesAWatchTooShortOrTooLongOrTooSparse) {
  testing::expect_error<ValueError>([] { tools::watch_speeds(1); },
                                    {"--watch_speeds", "2 to 3600 seconds"});
  testing::expect_error<ValueError>([] { tools::watch_speeds(7200); }, {"2 to 3600 seconds"});
  testing::expect_error<ValueError>([] { tools::watch_speeds(4, 2); },
                                    {"interval", "a quarter of the watch"});
}

TEST(SpeedWatch, SamplesEveryCpuAtEveryInstant) {
  const SpeedWatch w = tools::watch_speeds(2, 0.25);
  ASSERT_FALSE(w.cpus.empty());
  ASSERT_EQ(w.float32.size(), w.cpus.size());
  ASSERT_EQ(w.bfloat16.size(), w.cpus.size());
  for (size_t c = 0; c < w.cpus.size(); ++c) {
    ASSERT_EQ(w.float32[c].size(), 8u);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_GT(w.float32[c][i], 0.1) << "CPU " << w.cpus[c] << " instant " << i;
      EXPECT_GT(w.bfloat16[c][i], 0.1) << "CPU " << w.cpus[c] << " instant " << i;
    }
  }
  EXPECT_NE(tools::speed_states_report(w).find("watched"), std::string::npos);
}

}  // namespace
}  // namespace mtf
