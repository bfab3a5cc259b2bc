// gemm_fit.h — the calibration's fit of a host's matrix-product curve
// (peak, half and narrow of HostCompute) to products timed through mtf.
// Header-only, for the tests.
//
// The model fitted is the simulator's own, Topology::host_gemm_seconds
// (its bytes bound included), and the fit minimises the sum of squared
// logs of predicted over measured time: every product's relative error
// counts alike, whatever its size or shape. Fitting the three figures
// together matters: fitted one after the other (peak and half by a line
// through the squarer products, of which 128^3 is the smallest on two
// threads, then narrow as the median excess of the rest on top of them),
// two BLAS threads' curve on an AMD EPYC VM put a 128x32x128 product at
// +59% of its measured time and an LM's attention products (batches of
// 128x32x128) at 2.2x theirs.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mtf/sim.h"

namespace mtf::tools {

struct ProductShape {
  int64_t m, k, n;
  double flops() const { return 2.0 * m * k * n; }
};

// The shapes mtf-sim --calibrate times (m x k x n): square, thin and
// batched-attention-like; with several threads, those OpenBLAS shares out
// (m·k·n above machine.host.gemm_threads_from).
inline std::vector<ProductShape> calibration_shapes(const Topology& machine, int threads) {
  static const std::vector<ProductShape> kShapes = {
      {32, 32, 32},    {64, 64, 64},     {128, 128, 128},  {256, 256, 256},  {512, 512, 512},
      {768, 768, 768}, {100, 784, 1024}, {128, 512, 2048}, {1024, 512, 128}, {1024, 256, 1024},
      {128, 32, 128},  {512, 64, 512},   {100, 1024, 10},  {1024, 16, 512},  {2048, 256, 32}};
  std::vector<ProductShape> used;
  for (const ProductShape& s : kShapes)
    if (threads == 1 || static_cast<double>(s.m * s.k * s.n) > machine.host.gemm_threads_from)
      used.push_back(s);
  return used;
}

// `machine` as one rank whose BLAS uses `threads` threads: the topology on
// which host_gemm_seconds applies that many threads' curve.
inline Topology one_rank_on(Topology machine, int threads) {
  machine.host_cpus = threads;
  machine.nodes = 1;
  machine.devices_per_node = 1;
  machine.cores_per_chip = 1;
  return machine;
}

// A product's time as the simulator predicts it on `one_rank` (from
// one_rank_on: its host_cpus are the rank's threads), outside programs.
inline double curve_seconds(const Topology& one_rank, const ProductShape& s) {
  return one_rank.host_gemm_seconds(static_cast<double>(s.m), static_cast<double>(s.n),
                                    static_cast<double>(s.k), DType::kFloat32,
                                    one_rank.host_cpus == 1, false);
}

// A curve's three fitted figures.
struct GemmCurve {
  double peak = 0, half = 0, narrow = 0;  // gemm_flops, gemm_half_flops, gemm_narrow
};

// The curve for `threads` BLAS threads (one_cpu's for one, all_cpus' for
// several) that fits `seconds[i]`, the measured time of `shapes[i]`.
// `machine`'s other figures (the matrix-vector bandwidths of the bytes
// bound) are used as they are.
// REQUIRES: shapes.size() == seconds.size() >= 3, every time > 0; with
// several threads, every shape above machine.host.gemm_threads_from (as
// calibration_shapes gives them).
inline GemmCurve fit_gemm_curve(const Topology& machine, int threads,
                                const std::vector<ProductShape>& shapes,
                                const std::vector<double>& seconds) {
  Topology one_rank = one_rank_on(machine, threads);
  HostCompute& c = threads == 1 ? one_rank.host.one_cpu : one_rank.host.all_cpus;
  auto error = [&](const std::array<double, 3>& p) {
    c.gemm_flops = p[0];
    c.gemm_half_flops = p[1];
    c.gemm_narrow = p[2];
    double sum = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const double r = std::log(curve_seconds(one_rank, shapes[i]) / seconds[i]);
      sum += r * r;
    }
    return sum;
  };
  // Start: peak at the products' geometric-mean rate; half and narrow over
  // every size they could take (up to 10^8 flops; a side of up to 1000).
  double log_rate = 0;
  for (size_t i = 0; i < shapes.size(); ++i) log_rate += std::log(shapes[i].flops() / seconds[i]);
  log_rate /= static_cast<double>(shapes.size());
  // Each figure on a log grid (half and narrow may also be 0), narrowed
  // around the best point in each round.
  std::array<double, 3> lo{log_rate - std::log(4.0), std::log(1e3), std::log(1e-2)};
  std::array<double, 3> hi{log_rate + std::log(4.0), std::log(1e8), std::log(1e3)};
  std::array<double, 3> best{std::exp(log_rate), 0, 0};
  double best_error = error(best);
  constexpr int kSteps = 24, kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    std::array<double, 3> step{};
    for (int d = 0; d < 3; ++d) step[d] = (hi[d] - lo[d]) / kSteps;
    auto value = [&](int d, int i) {
      return i < 0 && d > 0 ? 0.0 : std::exp(lo[d] + step[d] * std::max(i, 0));
    };
    std::array<double, 3> p{};
    for (int a = 0; a <= kSteps; ++a) {
      p[0] = value(0, a);
      for (int b = -1; b <= kSteps; ++b) {
        p[1] = value(1, b);
        for (int e = -1; e <= kSteps; ++e) {
          p[2] = value(2, e);
          const double err = error(p);
          if (err < best_error) {
            best_error = err;
            best = p;
          }
        }
      }
    }
    // The next grid spans two of this grid's steps either side of the best
    // (a figure at 0 keeps its range's low end).
    for (int d = 0; d < 3; ++d) {
      const double at = best[d] > 0 ? std::log(best[d]) : lo[d];
      lo[d] = at - 2 * step[d];
      hi[d] = at + 2 * step[d];
    }
  }
  return {best[0], best[1], best[2]};
}

}  // namespace mtf::tools
