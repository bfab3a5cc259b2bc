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
#include "reference_programs.h"

namespace mtf::tools {
namespace {

// A square product of `side` in `dtype`, fetched (as product_rates.cc times
// bfloat16 products: an assign to a bfloat16 variable rounds element by
// element and would be timed with it).
class Product {
 public:
  Product(DType dtype, int64_t side) : mesh_(graph_, "watch") {
    Dimension m{"m", side}, k{"k", side}, n{"n", side};
    const Initializer init = Initializer::glorot_uniform();
    const Tensor a = get_variable(mesh_, "a", Shape({m, k}), init, dtype);
    const Tensor b = get_variable(mesh_, "b", Shape({k, n}), init, dtype);
    product_ = einsum({a, b}, Shape({m, n}));
    session_ = std::make_unique<Session>(graph_, MeshConfig{});
    flops_ =
        2.0 * static_cast<double>(side) * static_cast<double>(side) * static_cast<double>(side);
  }
  void run() { session_->run(std::vector<Tensor>{product_}); }
  // GFLOP/s of the median of 3 runs.
  double rate() {
    std::vector<double> t;
    for (int i = 0; i < 3; ++i) t.push_back(time_once([&] { run(); }));
    return flops_ / median(t) / 1e9;
  }

 private:
  Graph graph_;
  Mesh mesh_;
  Tensor product_;
  std::unique_ptr<Session> session_;
  double flops_ = 0;
};

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
  std::vector<std::unique_ptr<Product>> f32, b16;
  for (size_t c = 0; c < cpus; ++c) {
    f32.push_back(std::make_unique<Product>(float32, 512));
    b16.push_back(std::make_unique<Product>(bfloat16, 512));
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
          w.float32[c][i] = f32[c]->rate();
          w.bfloat16[c][i] = b16[c]->rate();
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
