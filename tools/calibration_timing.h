// calibration_timing.h — wall-clock medians for mtf-sim --calibrate, and
// the text of its points.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mtf::tools {

using Clock = std::chrono::steady_clock;

// The parts streamed into one string ("einsum ", m, "x", k, ...).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream o;
  (o << ... << parts);
  return o.str();
}

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The median of `t` (the upper one of an even count). REQUIRES: t not empty.
inline double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Seconds of one call of fn.
inline double time_once(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return seconds_since(t0);
}

// Median seconds of fn: two untimed runs, then at least `min_reps` timed
// ones, more while under `budget` seconds (0: exactly min_reps, as ranks
// that must make the same calls need).
inline double time_median(const std::function<void()>& fn, int min_reps = 7, double budget = 0.5) {
  fn();
  fn();
  std::vector<double> t;
  const auto start = Clock::now();
  while (static_cast<int>(t.size()) < min_reps ||
         (seconds_since(start) < budget && t.size() < 400)) {
    t.push_back(time_once(fn));
  }
  return median(std::move(t));
}

// Median seconds of a and of b, runs alternating so that the machine's
// drift falls on both alike: `warmup` untimed runs of each, then
// `after_warmup` (if any), then `timed` timed runs of each.
inline std::pair<double, double> time_alternating(const std::function<void()>& a,
                                                  const std::function<void()>& b, int warmup,
                                                  int timed,
                                                  const std::function<void()>& after_warmup = {}) {
  for (int i = 0; i < warmup; ++i) {
    a();
    b();
  }
  if (after_warmup) after_warmup();
  std::vector<double> ta, tb;
  for (int i = 0; i < timed; ++i) {
    ta.push_back(time_once(a));
    tb.push_back(time_once(b));
  }
  return {median(std::move(ta)), median(std::move(tb))};
}

}  // namespace mtf::tools
