// host_calibration.h — measures this machine as mtf runs on it and describes
// it as a simulator machine (Topology with host_cpus > 0), for
// `mtf-sim --calibrate FILE`.
//
// Everything is timed through mtf itself, each figure the median of several
// runs: the per-step and per-run overheads of the executor (chains of tiny
// ops), one BLAS thread's rate on matrix products by size (einsums of
// several sizes, fitted to rate(f) = gemm_flops * f / (f + gemm_half_flops)),
// what all CPUs reach on a large product, elementwise memory bandwidth and
// flop rate, and the latency and bandwidth between two ranks as threads of
// one process (the in-process transport) and as processes (TCP with shared
// memory between ranks of one machine, in processes of their own). The
// result is one node of
// `cpus` devices (one per CPU) on a switch fabric; choose the ranks of a run
// with devices_per_node and host_ranks.
#pragma once

#include <string>
#include <vector>

#include "mtf/sim.h"

namespace mtf::tools {

struct CalibrationPoint {
  std::string what;    // e.g. "einsum 256x256x256, 1 thread"
  double seconds = 0;  // median
  double rate = 0;     // flop/s or bytes/s the point stands for (0: none)
  double model = 0;    // what the fitted machine predicts for it (0: not a fit point)
};

struct Calibration {
  Topology machine;
  std::vector<CalibrationPoint> points;
  std::string steadiness;      // steadiness_report of the rounds (empty for one)
  std::string report() const;  // one line per point, the steadiness, then the machine
};

// Measures `rounds` times and keeps each figure's median (this VM's speed
// moves by 10-30% within minutes; one round's figures move with it); the
// points are the first round's. About 10 s a round; `progress` lines go to
// stderr when set.
Calibration calibrate_host(bool progress, int rounds = 3);

// The main of a rank that calibration starts as a process of its own (see
// rank_links.h); mtf-sim's main hands over when is_calibration_rank().
int calibration_rank(int argc, char** argv);

}  // namespace mtf::tools
