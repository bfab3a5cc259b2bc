// speed_states.h — how this machine's speed moves from one second to the
// next: products timed on every CPU at once at regular instants
// (`mtf-sim --watch_speeds`), each CPU's rates split into a fast and a slow
// level. A VM whose host runs other tenants on the same cores can switch
// between two speeds every few seconds, each CPU on its own; a step of
// several ranks waits for the slowest, so it runs at the fast speed only
// when every CPU is fast at once.
#pragma once

#include <string>
#include <vector>

namespace mtf::tools {

// One CPU's rates (higher is faster) at regular instants, as two levels:
// the split of the sorted rates that leaves the least squared deviation
// within each side (two-means in one dimension), each level its side's
// median. Rates alike to within a part in a million are one level (fast,
// held all along).
struct TwoLevels {
  double fast = 0, slow = 0;  // the levels (slow == fast: one level)
  double fast_share = 0;      // of the instants, the share at the fast level
  double hold_seconds = 0;    // how long one level held, on average
  std::vector<bool> at_fast;  // per instant
  double spread_percent() const { return slow > 0 ? 100 * (fast / slow - 1) : 0; }
};
// ValueError for no rates, a rate that is not positive, or an interval that
// is not positive.
TwoLevels two_levels(const std::vector<double>& rates, double interval_seconds);

// Of the instants every CPU was sampled at, the share at which all of them
// were at their fast level at once. ValueError when the CPUs' instants
// differ in number.
double all_fast_share(const std::vector<TwoLevels>& cpus);

// What `mtf-sim --watch_speeds` measured: GFLOP/s of a float32 and of a
// bfloat16 product, [cpu][instant], the instants `interval` seconds apart.
struct SpeedWatch {
  std::vector<int> cpus;  // the CPUs' numbers
  double interval = 0.25;
  std::vector<std::vector<double>> float32, bfloat16;
};

// The lines mtf-sim prints of it: per CPU and product, the two levels, the
// share of the time at the fast one and how long a level held; for several
// CPUs, how often all were fast at once (and how often they would be if
// each CPU moved on its own); then, when a level moved by more than
// `limit_percent`, what that means for a prediction, else that the machine
// is steady enough to check predictions to that limit.
std::string speed_states_report(const SpeedWatch& watch, double limit_percent = 10);

}  // namespace mtf::tools
