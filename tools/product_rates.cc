// Calibration of products beyond the fitted float32 curve; see
// product_rates.h.
#include "product_rates.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <string>
#include <vector>

#include "calibration_timing.h"
#include "mtf/mtf.h"
#include "product_run.h"

namespace mtf::tools {

double einsum_seconds(int64_t m, int64_t k, int64_t n, DType dtype, bool assigned) {
  ProductRun product(m, k, n, dtype, assigned);
  return time_median([&] { product.run(); }, 5, 0.3);
}

// bfloat16 products against the same in float32, on `threads` threads: the
// median ratio of their times over shapes large enough for either to run
// near its peak (bfloat16 uses the CPU's AVX512-BF16 instructions, or AMX
// through oneDNN, where it has them, float32 arithmetic elsewhere). The
// products are fetched, not assigned: assigning to a bfloat16 variable
// rounds the new value element by element (0.47 ms for 512x512 on an Intel
// Xeon with AMX, where the product took 0.44 ms) while a float32 assign
// swaps a buffer, and that difference made the ratio 2.7 for products that
// run 4.5x faster.
void measure_bfloat16_gemm(Calibration& cal, int threads) {
  static const std::vector<std::array<int64_t, 3>> shapes = {
      {512, 512, 512}, {768, 768, 768}, {128, 512, 2048}, {1024, 256, 1024}, {2048, 256, 512}};
  std::vector<double> ratios;
  for (const auto& [m, k, n] : shapes) {
    const double f32 = einsum_seconds(m, k, n, float32, false),
                 b16 = einsum_seconds(m, k, n, bfloat16, false);
    ratios.push_back(f32 / b16);
    cal.points.push_back({cat("einsum ", m, "x", k, "x", n, " in bfloat16, ", threads,
                              threads == 1 ? " thread" : " threads"),
                          b16, 2.0 * m * k * n / b16, 0});
  }
  std::sort(ratios.begin(), ratios.end());
  HostCompute& c = threads == 1 ? cal.machine.host.one_cpu : cal.machine.host.all_cpus;
  c.gemm_bfloat16_speedup = ratios[ratios.size() / 2];
}

// Matrix-vector products as decoding one token runs them: a vector through
// 6 matrices in one run, each read once per run: of 4 MiB (24 MiB in all,
// evicted by the others before the next run) for gemm_memory_bandwidth, of
// 1 MiB (6 MiB: they stay in the last-level cache) for
// gemm_cache_bandwidth. The matrices' bytes over the run's time less its
// overheads; with `ranks` > 1, as many replicated ranks as threads of one
// process, each streaming its own copy at once (the rate is each rank's).
namespace {

double matrix_vector_rate(Calibration& cal, int64_t rows, int threads, int ranks = 1) {
  constexpr int kMatrices = 6;
  constexpr int64_t kSide = 1024;
  Graph g;
  Mesh mesh(g, "calibration");
  const Dimension one{"one", 1}, in{"in", rows}, out{"out", kSide};
  const Tensor x = get_variable(mesh, "x", Shape({one, in}));
  std::vector<Operation*> writes;
  for (int i = 0; i < kMatrices; ++i) {
    const std::string n = std::to_string(i);
    const Tensor w = get_variable(mesh, "w" + n, Shape({in, out}));
    const Tensor y = get_variable(mesh, "y" + n, Shape({one, out}));
    writes.push_back(assign(y, einsum({x, w}, Shape({one, out}))));
  }
  MeshConfig config;
  if (ranks > 1) config.mesh_shape = MeshShape("all:" + std::to_string(ranks));
  Session s(g, config);
  const double run = time_median([&] { s.run(std::vector<Tensor>{}, {}, writes); }, 7, 0.3);
  const HostFigures& h = cal.machine.host;
  const double t = std::max(1e-9, run - (ranks > 1 ? h.threads_run_overhead : h.run_overhead) -
                                      3 * kMatrices * h.step_overhead);
  const double bytes = 4.0 * kMatrices * (rows * kSide + rows + kSide);
  cal.points.push_back({cat(kMatrices, " matrix-vector products of ", rows * kSide * 4 >> 20,
                            " MiB, ", threads, threads == 1 ? " thread" : " threads",
                            ranks > 1 ? cat(", on each of ", ranks, " ranks at once") : ""),
                        t, bytes / t, 0});
  return bytes / t;
}

}  // namespace

void measure_product_bandwidth(Calibration& cal, int threads) {
  HostCompute& c = threads == 1 ? cal.machine.host.one_cpu : cal.machine.host.all_cpus;
  c.gemm_memory_bandwidth = matrix_vector_rate(cal, 1024, threads);
  c.gemm_cache_bandwidth = matrix_vector_rate(cal, 256, threads);
}

void measure_busy_product_bandwidth(Calibration& cal, int cpus) {
  cal.machine.host.gemm_memory_bandwidth_busy = matrix_vector_rate(cal, 1024, 1, cpus);
}

namespace {

// Seconds per call of 2048 float32 products [m,k] x [k,n] called one after
// another, each on its own operands (the median of repeats).
double small_product_seconds(int m, int n, int k) {
  constexpr int kCalls = 2048;
  std::vector<float> a(static_cast<size_t>(kCalls) * m * k, 1.f),
      b(static_cast<size_t>(kCalls) * k * n, 1.f), c(static_cast<size_t>(kCalls) * m * n);
  auto calls = [&] {
    for (size_t i = 0; i < kCalls; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data() + i * m * k, k,
                  b.data() + i * k * n, n, 0.f, c.data() + i * m * n, n);
  };
  return time_median(calls, 7, 0.05) / kCalls;
}

}  // namespace

void measure_small_products(Calibration& cal) {
  const double tiny_flops = 2.0 * 4, small_flops = 2.0 * 16 * 16 * 16;
  const double tiny = small_product_seconds(4, 1, 1), small = small_product_seconds(16, 16, 16);
  HostFigures& h = cal.machine.host;
  h.gemm_small_flops = small > tiny ? (small_flops - tiny_flops) / (small - tiny) : 0;
  h.gemm_call_seconds =
      h.gemm_small_flops > 0 ? std::max(0.0, tiny - tiny_flops / h.gemm_small_flops) : 0;
  cal.points.push_back({"a 4x1 by 1x1 product in a batch, 1 thread", tiny, tiny_flops / tiny, 0});
  cal.points.push_back(
      {"a 16x16 by 16x16 product in a batch, 1 thread", small, small_flops / small, 0});
}

}  // namespace mtf::tools
