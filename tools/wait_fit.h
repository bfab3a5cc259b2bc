// wait_fit.h — the calibration's fit of what taking turns costs ranks that
// outnumber the CPUs: a wait per collective step and a latency added to
// every message, from reference programs measured for real and simulated
// with each cost probed (linear in both). Header-only, for the tests.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace mtf::tools {

// One reference program: its measured step, its simulated step with
// neither cost, and what a second of each adds to the simulated step (its
// collectives, and its messages, on the critical path).
struct WaitReference {
  double measured = 0, without = 0, per_wait = 0, per_extra = 0;
};

// The (wait, extra) >= 0, each at most its cap, minimising
// sum((without + per_wait * wait + per_extra * extra) / measured - 1)^2 over
// the references. With per_extra all 0 (or one reference) it fits the
// wait alone; a pair the references cannot tell apart gets the better of
// the two one-cost fits.
inline std::pair<double, double> fit_wait_and_latency(const std::vector<WaitReference>& refs,
                                                      double wait_cap, double extra_cap) {
  auto residual = [&](double w, double e) {
    double sum = 0;
    for (const WaitReference& r : refs) {
      const double rel = (r.without + r.per_wait * w + r.per_extra * e) / r.measured - 1;
      sum += rel * rel;
    }
    return sum;
  };
  // One cost with the other held at 0: the 1-D least squares, clamped.
  auto best_one = [&](bool wait) {
    double num = 0, den = 0;
    for (const WaitReference& r : refs) {
      const double a = (wait ? r.per_wait : r.per_extra) / r.measured;
      num += a * (1 - r.without / r.measured);
      den += a * a;
    }
    return den > 0 ? std::clamp(num / den, 0.0, wait ? wait_cap : extra_cap) : 0.0;
  };
  std::vector<std::pair<double, double>> candidates = {{best_one(true), 0}, {0, best_one(false)}};
  // Both free: the normal equations of the 2x2 least squares, kept when
  // both come out >= 0 (else the optimum lies on an edge, above).
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  for (const WaitReference& r : refs) {
    const double a = r.per_wait / r.measured, b = r.per_extra / r.measured;
    const double y = 1 - r.without / r.measured;
    aa += a * a;
    ab += a * b;
    bb += b * b;
    ay += a * y;
    by += b * y;
  }
  const double det = aa * bb - ab * ab;
  if (det > 1e-9 * aa * bb) {
    const double w = (ay * bb - by * ab) / det, e = (by * aa - ay * ab) / det;
    if (w >= 0 && e >= 0) candidates.push_back({std::min(w, wait_cap), std::min(e, extra_cap)});
  }
  std::pair<double, double> best = candidates[0];
  for (const auto& c : candidates)
    if (residual(c.first, c.second) < residual(best.first, best.second)) best = c;
  return best;
}

}  // namespace mtf::tools
