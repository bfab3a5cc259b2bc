// run_in_process: N ranks of one in-process world as fibers, threads, or
// fibers on a pool of threads.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <boost/fiber/all.hpp>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/cpus.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "transport/first_error.h"

namespace mtf {

namespace {

// Rank stacks: kernels (and OpenBLAS) may use a fair amount of stack; the
// pages are only touched when used.
constexpr size_t kFiberStackBytes = 512 * 1024;

// Threads that run the blocks of rank fibers, kept from one run to the next:
// a long-lived thread tends to wake on the CPU it last ran on, where its
// ranks' data still is, and a run starts without creating threads (new
// threads each run measured ~25% slower on small steps: cold caches and
// ~0.4 ms of set-up). One run at a time uses the pool; a run that finds it
// busy (meshes run from several threads at once) makes threads of its own.
class RankThreadPool {
 public:
  // Runs job(t) for t in [0, n) on n pool threads and waits for all; false
  // (nothing run) when another run holds the pool.
  bool run(int n, const std::function<void(int)>& job) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    std::unique_lock<std::mutex> lock(mu_);
    while (static_cast<int>(workers_.size()) < n) {
      const int t = static_cast<int>(workers_.size());
      workers_.push_back(std::make_unique<Worker>());
      std::thread([this, t] { serve(t); }).detach();
    }
    job_ = &job;
    pending_ = n;
    for (int t = 0; t < n; ++t) {
      workers_[t]->go = true;
      workers_[t]->cv.notify_one();
    }
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  struct Worker {
    bool go = false;
    std::condition_variable cv;
  };

  void serve(int t) {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      Worker& me = *workers_[t];
      me.cv.wait(lock, [&] { return me.go; });
      me.go = false;
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(t);  // the job catches its ranks' errors itself
      lock.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex busy_;  // held by the run using the pool
  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
  const std::function<void(int)>* job_ = nullptr;
  int pending_ = 0;
  std::condition_variable done_;
};

// MTF_RANK_POOL=0 makes threads afresh for every run (for comparison).
bool use_rank_thread_pool() {
  static const bool use = [] {
    const char* v = std::getenv("MTF_RANK_POOL");
    return !(v && std::string(v) == "0");
  }();
  return use;
}

// Never destroyed: its threads wait for work until the process ends. A
// child made by fork() has none of them: it starts a pool of its own (the
// parent's, whose locks another thread may have held, is left alone).
std::atomic<RankThreadPool*> g_pool{nullptr};

RankThreadPool& rank_thread_pool() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(new RankThreadPool()); });
    g_pool.store(new RankThreadPool());
    return true;
  }();
  (void)registered;
  return *g_pool.load();
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
    const std::function<void(int)> block = [&](int t) {
      run_fibers(t * size / w, (t + 1) * size / w, rank_main);
    };
    if (!use_rank_thread_pool() || !rank_thread_pool().run(w, block)) {
      std::vector<std::thread> threads;
      for (int t = 0; t < w; ++t) threads.emplace_back(block, t);
      for (auto& t : threads) t.join();
    }
  }
  errors.rethrow_if_any();
}

}  // namespace mtf
