// run_in_process: N ranks of one in-process world as fibers or threads.
#include <boost/fiber/all.hpp>
#include <exception>
#include <mutex>
#include <thread>

#include "mtf/errors.h"
#include "mtf/in_process_transport.h"

namespace mtf {

namespace {

// Rank stacks: kernels (and OpenBLAS) may use a fair amount of stack; the
// pages are only touched when used.
constexpr size_t kFiberStackBytes = 512 * 1024;

// Keeps the first error that is a cause, falling back to the first
// PeerLostError (a consequence of another rank's failure).
class FirstError {
 public:
  void record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    bool lost = false;
    try {
      std::rethrow_exception(e);
    } catch (const PeerLostError&) {
      lost = true;
    } catch (...) {
    }
    if (lost) {
      if (!consequence_) consequence_ = e;
    } else if (!cause_) {
      cause_ = e;
    }
  }
  void rethrow_if_any() const {
    if (cause_) std::rethrow_exception(cause_);
    if (consequence_) std::rethrow_exception(consequence_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr cause_, consequence_;
};

}  // namespace

void run_in_process(int size, const std::function<void(Transport&)>& body, RankExecution execution,
                    std::chrono::milliseconds timeout) {
  auto world = InProcessWorld::create(size, execution);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int r = 0; r < size; ++r) {
    transports.push_back(world->transport(r));
    transports.back()->set_timeout(timeout);
  }
  FirstError errors;
  auto rank_main = [&](int r) {
    try {
      body(*transports[r]);
    } catch (...) {
      errors.record(std::current_exception());
      world->kill(r);  // peers waiting on r fail now instead of at their deadline
    }
  };
  if (execution == RankExecution::kFibers) {
    std::vector<boost::fibers::fiber> fibers;
    for (int r = 0; r < size; ++r) {
      fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(kFiberStackBytes),
                          rank_main, r);
    }
    for (auto& f : fibers) f.join();
  } else {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) threads.emplace_back(rank_main, r);
    for (auto& t : threads) t.join();
  }
  errors.rethrow_if_any();
}

}  // namespace mtf
