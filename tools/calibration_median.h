// calibration_median.h — one machine from several calibrations of this
// host (the rounds of `mtf-sim --calibrate`, or calibrations spread through
// a validation run, `mtf-sim --from_calibrations`).
#pragma once

#include <vector>

#include "mtf/sim.h"

namespace mtf::tools {

// One machine from calibrations taken at different times (rounds of one
// calibration, or calibrations spread through a validation run): each
// figure the median of theirs, and each fitted product curve's three figures
// together from the calibration with the median peak. The sources are the
// first one's. ValueError for none.
Topology median_of_calibrations(const std::vector<Topology>& rounds);

}  // namespace mtf::tools
