// run_in_process: N ranks of one in-process world as fibers or threads.
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

}  // namespace

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
