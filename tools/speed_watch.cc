// Products on every CPU at once at regular instants; see speed_watch.h.
#include "speed_watch.h"

#include <cblas.h>

#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "calibration_timing.h"
#include "mtf/mtf.h"
#include "product_run.h"
#include "reference_programs.h"

namespace mtf::tools {
namespace {

// GFLOP/s of the median of 3 runs of `product`.
double rate(ProductRun& product) {
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) t.push_back(time_once([&] { product.run(); }));
  return product.flops() / median(t) / 1e9;
}

}  // namespace

SpeedWatch watch_speeds(double seconds, double interval) {
  if (!(seconds >= 2 && seconds <= 3600))
    throw ValueError(cat("--watch_speeds: watch for 2 to 3600 seconds, not ", seconds));
  if (!(interval >= 0.05 && interval <= seconds / 4))
    throw ValueError(cat("--watch_speeds: the interval must be 0.05 s to a quarter of the watch (",
                         seconds / 4, " s), not ", interval, " s"));
  SpeedWatch w;
  w.cpus = allowed_cpus();
  w.interval = interval;
  const size_t cpus = w.cpus.size();
  const auto instants = static_cast<size_t>(std::floor(seconds / interval));
  w.float32.assign(cpus, std::vector<double>(instants, 0));
  w.bfloat16.assign(cpus, std::vector<double>(instants, 0));
  // Graphs and sessions made here, one pair per CPU; each runs on its own
  // CPU's thread only.
  // Fetched, not assigned, as product_rates.cc times bfloat16 products.
  std::vector<std::unique_ptr<ProductRun>> f32, b16;
  for (size_t c = 0; c < cpus; ++c) {
    f32.push_back(std::make_unique<ProductRun>(512, 512, 512, float32, false));
    b16.push_back(std::make_unique<ProductRun>(512, 512, 512, bfloat16, false));
  }
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  const auto start = Clock::now() + std::chrono::seconds(1);  // after every thread's warm-up
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> failed(cpus);
  for (size_t c = 0; c < cpus; ++c) {
    threads.emplace_back([&, c] {
      try {
        PinnedTo pin(w.cpus[c]);
        f32[c]->run();
        b16[c]->run();
        for (size_t i = 0; i < instants; ++i) {
          std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(i * interval)));
          w.float32[c][i] = rate(*f32[c]);
          w.bfloat16[c][i] = rate(*b16[c]);
        }
      } catch (...) {
        failed[c] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  openblas_set_num_threads(blas_threads);
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return w;
}

}  // namespace mtf::tools
