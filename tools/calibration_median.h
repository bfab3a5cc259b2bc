// calibration_median.h — one machine from several calibrations of this
// host (the rounds of `mtf-sim --calibrate`, or calibrations spread through
// a validation run, `mtf-sim --from_calibrations`).
#pragma once

#include <string>
#include <vector>

#include "mtf/sim.h"

namespace mtf::tools {

// One machine from calibrations taken at different times (rounds of one
// calibration, or calibrations spread through a validation run): each
// figure the median of theirs, but figures fitted together whole from one
// calibration: each product curve's three from the one with the median
// peak, the crowded ranks' wait, latency and bandwidth (threads', and
// processes') from the one with the median wait plus latency. The sources
// are the first one's. ValueError for none.
Topology median_of_calibrations(const std::vector<Topology>& rounds);

// How far calibrations of one host disagree on the figures a steady machine
// measures alike every time: products on one thread and on every CPU,
// bfloat16 products on one thread, and what ranks filling the CPUs cost
// (busy_in_program). A VM whose host is shared moves them by tens of
// percent within minutes, and a prediction on it is no closer than that.
struct Steadiness {
  // "matrix products on one thread 100 to 143 GFLOP/s (43%); ...": each
  // figure's range and its spread (largest over smallest), the figures
  // every calibration measured.
  std::string text;
  double widest = 0;  // the largest spread, percent
};
Steadiness steadiness_of_calibrations(const std::vector<Topology>& rounds);

// The lines mtf-sim prints of it: the ranges, and when a figure moved by
// more than `limit_percent`, what that means for predictions made on the
// combined machine. Empty for fewer than 2 calibrations.
std::string steadiness_report(const std::vector<Topology>& rounds, double limit_percent = 10);

}  // namespace mtf::tools
