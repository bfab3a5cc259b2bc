// run_in_process: N ranks of one in-process world as fibers, threads, or
// fibers on a pool of threads.
#include <sched.h>

#include <algorithm>
#include <boost/fiber/all.hpp>
#include <exception>
#include <mutex>
#include <thread>

#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "transport/first_error.h"

namespace mtf {

namespace {

// Rank stacks: kernels (and OpenBLAS) may use a fair amount of stack; the
// pages are only touched when used.
constexpr size_t kFiberStackBytes = 512 * 1024;

// CPUs this process may run on (its affinity mask, which containers and
// taskset narrow), at least 1.
int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs ranks [begin, end) as fibers on the calling thread and joins them.
template <typename RankMain>
void run_fibers(int begin, int end, const RankMain& rank_main) {
  std::vector<boost::fibers::fiber> fibers;
  for (int r = begin; r < end; ++r) {
    fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(kFiberStackBytes),
                        rank_main, r);
  }
  for (auto& f : fibers) f.join();
}

}  // namespace

int rank_threads(int size, RankExecution execution) {
  switch (execution) {
    case RankExecution::kFibers:
      return 1;
    case RankExecution::kThreads:
      return size;
    case RankExecution::kPool:
      return std::max(1, std::min(size, available_cpus()));
  }
  return 1;
}

const char* rank_execution_name(RankExecution execution) {
  switch (execution) {
    case RankExecution::kFibers:
      return "fibers";
    case RankExecution::kThreads:
      return "threads";
    case RankExecution::kPool:
      return "pool";
  }
  return "?";
}

RankExecution parse_rank_execution(const std::string& name) {
  for (RankExecution e : {RankExecution::kFibers, RankExecution::kThreads, RankExecution::kPool})
    if (name == rank_execution_name(e)) return e;
  throw ValueError("unknown rank execution \"" + name +
                   "\": choose fibers (all cores on one thread), threads (a thread per core) "
                   "or pool (cores as fibers on one thread per CPU)");
}

void run_in_process(int size, const std::function<void(Transport&)>& body, RankExecution execution,
                    std::chrono::milliseconds timeout) {
  auto world = InProcessWorld::create(size, execution);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int r = 0; r < size; ++r) {
    transports.push_back(world->transport(r));
    transports.back()->set_timeout(timeout);
  }
  transport::FirstError errors;
  auto rank_main = [&](int r) {
    try {
      body(*transports[r]);
    } catch (...) {
      errors.record(std::current_exception());
      world->kill(r);  // peers waiting on r fail now instead of at their deadline
    }
  };
  if (execution == RankExecution::kThreads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) threads.emplace_back(rank_main, r);
    for (auto& t : threads) t.join();
  } else {
    // Thread t runs the contiguous block of ranks [t*size/w, (t+1)*size/w) as
    // fibers; Boost.Fiber's mutex and condition variable wake fibers across
    // threads. The calling thread only waits: running a block on it measured
    // ~30% slower (mesh_benchmark), as it competes with the BLAS worker
    // threads its own earlier calls left spinning.
    const int w = rank_threads(size, execution);
    auto block = [&](int t) { run_fibers(t * size / w, (t + 1) * size / w, rank_main); };
    std::vector<std::thread> threads;
    for (int t = 0; t < w; ++t) threads.emplace_back(block, t);
    for (auto& t : threads) t.join();
  }
  errors.rethrow_if_any();
}

}  // namespace mtf
