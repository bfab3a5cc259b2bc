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

}  // namespace mtf::tools
