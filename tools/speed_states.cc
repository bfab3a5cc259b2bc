// Two speed levels per CPU and what they mean for predictions; see
// speed_states.h.
#include "speed_states.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "calibration_timing.h"
#include "mtf/mtf.h"

namespace mtf::tools {
namespace {

// Three significant figures ("145", "0.25", "1.2e+03" never: rates stay
// under a million GFLOP/s).
std::string sig3(double x) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g", x);
  return b;
}

// The split index k of sorted `s` (lower side s[0..k), upper s[k..n)) with
// the least squared deviation within the two sides. REQUIRES: n >= 2.
size_t best_split(const std::vector<double>& s) {
  const size_t n = s.size();
  std::vector<double> sum(n + 1, 0), sq(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + s[i];
    sq[i + 1] = sq[i] + s[i] * s[i];
  }
  auto within = [&](size_t a, size_t b) {  // squared deviation of s[a..b)
    const double m = static_cast<double>(b - a), t = sum[b] - sum[a];
    return sq[b] - sq[a] - t * t / m;
  };
  size_t best = 1;
  double least = INFINITY;
  for (size_t k = 1; k < n; ++k) {
    const double d = within(0, k) + within(k, n);
    if (d < least) least = d, best = k;
  }
  return best;
}

// "float32 products 145 or 105 GFLOP/s (fast 34% of the time, a level held
// 4.2 s on average; 38% apart)", or one level's rate.
std::string describe(const char* what, const TwoLevels& t) {
  if (t.slow >= t.fast) return cat(what, " products ", sig3(t.fast), " GFLOP/s (one level)");
  return cat(what, " products ", sig3(t.fast), " or ", sig3(t.slow), " GFLOP/s (fast ",
             std::lround(100 * t.fast_share), "% of the time, a level held ", sig3(t.hold_seconds),
             " s on average; ", std::lround(t.spread_percent()), "% apart)");
}

}  // namespace

TwoLevels two_levels(const std::vector<double>& rates, double interval_seconds) {
  if (rates.empty()) throw ValueError("two_levels: no rates to split");
  if (!(interval_seconds > 0))
    throw ValueError("two_levels: the interval between instants must be positive, not " +
                     std::to_string(interval_seconds) + " s");
  for (size_t i = 0; i < rates.size(); ++i)
    if (!(rates[i] > 0) || !std::isfinite(rates[i]))
      throw ValueError("two_levels: the rate at instant " + std::to_string(i) + " is " +
                       std::to_string(rates[i]) + "; rates must be positive and finite");
  std::vector<double> s = rates;
  std::sort(s.begin(), s.end());
  TwoLevels t;
  const size_t n = s.size();
  t.at_fast.assign(n, true);
  if (n >= 2 && s.back() > s.front() * (1 + 1e-6)) {
    const size_t k = best_split(s);
    const double threshold = (s[k - 1] + s[k]) / 2;
    for (size_t i = 0; i < n; ++i) t.at_fast[i] = rates[i] > threshold;
  }
  std::vector<double> fast, slow;
  size_t changes = 0;
  for (size_t i = 0; i < n; ++i) {
    (t.at_fast[i] ? fast : slow).push_back(rates[i]);
    if (i > 0 && t.at_fast[i] != t.at_fast[i - 1]) ++changes;
  }
  t.fast = median(fast);
  t.slow = slow.empty() ? t.fast : median(slow);
  t.fast_share = static_cast<double>(fast.size()) / static_cast<double>(n);
  t.hold_seconds = static_cast<double>(n) * interval_seconds / static_cast<double>(changes + 1);
  return t;
}

double all_fast_share(const std::vector<TwoLevels>& cpus) {
  if (cpus.empty()) return 0;
  const size_t n = cpus.front().at_fast.size();
  for (const TwoLevels& c : cpus)
    if (c.at_fast.size() != n)
      throw ValueError("all_fast_share: the CPUs were sampled at " + std::to_string(n) + " and " +
                       std::to_string(c.at_fast.size()) + " instants; sample them together");
  if (n == 0) return 0;
  size_t all = 0;
  for (size_t i = 0; i < n; ++i)
    all += std::all_of(cpus.begin(), cpus.end(), [&](const TwoLevels& c) { return c.at_fast[i]; });
  return static_cast<double>(all) / static_cast<double>(n);
}

std::string speed_states_report(const SpeedWatch& watch, double limit_percent) {
  const size_t cpus = watch.cpus.size();
  if (cpus == 0 || watch.float32.size() != cpus || watch.bfloat16.size() != cpus)
    throw ValueError("speed_states_report: one float32 and one bfloat16 series per CPU needed");
  const size_t instants = watch.float32.front().size();
  std::string out = cat("watched ", cpus, cpus == 1 ? " CPU" : " CPUs", " for ",
                        sig3(static_cast<double>(instants) * watch.interval),
                        " s (a float32 and a bfloat16 product every ", sig3(watch.interval),
                        " s on each, all at once):\n");
  std::vector<TwoLevels> f32, b16;
  double widest = 0;
  for (size_t c = 0; c < cpus; ++c) {
    f32.push_back(two_levels(watch.float32[c], watch.interval));
    b16.push_back(two_levels(watch.bfloat16[c], watch.interval));
    widest = std::max({widest, f32.back().spread_percent(), b16.back().spread_percent()});
    out += cat("CPU ", watch.cpus[c], ": ", describe("float32", f32.back()), "; ",
               describe("bfloat16", b16.back()), "\n");
  }
  if (cpus > 1) {
    auto both = [](const std::vector<TwoLevels>& levels) {
      double independent = 1;
      for (const TwoLevels& l : levels) independent *= l.fast_share;
      return cat(std::lround(100 * all_fast_share(levels)), "% of the time (",
                 std::lround(100 * independent), "% were each CPU to move on its own)");
    };
    out += cat("every CPU fast at once: float32 ", both(f32), ", bfloat16 ", both(b16), "\n");
  }
  const long w = std::lround(widest);
  if (widest > limit_percent)
    return out +
           cat("this machine's speed moved by up to ", w,
               "% from one second to the next: launches of the same step can be that far "
               "apart, a step of several ranks runs at the fast speed only while every CPU is "
               "fast, and predictions cannot be checked to ",
               sig3(limit_percent), "% here (a steadier machine holds them closer)\n");
  return out + cat("steady: every CPU's levels within ", sig3(limit_percent), "% (up to ", w,
                   "%): predictions can be checked to that here\n");
}

}  // namespace mtf::tools
