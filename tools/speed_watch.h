// speed_watch.h — `mtf-sim --watch_speeds`: a float32 and a bfloat16
// product timed on every CPU at once at regular instants, to see how this
// machine's speed moves from one second to the next (speed_states.h says
// what the series mean).
#pragma once

#include "speed_states.h"

namespace mtf::tools {

// One thread pinned to each CPU this process may run on, one BLAS thread
// each; at every instant (`interval` seconds apart, for `seconds`) each
// times a 512x512x512 product in float32 and in bfloat16 through mtf (the
// median of 3 runs) and records its GFLOP/s. ValueError unless
// 2 <= seconds <= 3600 and 0.05 <= interval <= seconds / 4.
SpeedWatch watch_speeds(double seconds, double interval = 0.25);

}  // namespace mtf::tools
