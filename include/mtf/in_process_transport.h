// mtf/in_process_transport.h — N ranks in one process, as fibers or threads.
//
// InProcessWorld owns the mailboxes of N ranks; transport(r) is rank r's
// endpoint. Blocking calls use Boost.Fiber's mutex and condition variable,
// so the same code runs with the ranks as fibers on one thread (a waiting
// rank lets the others run), as N threads, or as fibers spread over a pool of
// one thread per CPU. When ranks run on several threads, recv() spins briefly
// (yielding) before it blocks, since a cross-core wake-up costs ~25 us here;
// fibers on one thread block at once (a switch costs ~50 ns).
//
// Fault injection for tests: kill(r) makes rank r lost (its peers' blocked
// and later calls that involve it fail with PeerLostError); set_delay()
// delays delivery.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "mtf/transport.h"

namespace mtf {

enum class RankExecution {
  kFibers,   // all ranks as fibers on the calling thread
  kThreads,  // one thread per rank
  kPool,     // ranks as fibers on min(ranks, CPUs) threads, in contiguous blocks;
             // the threads are kept for the next run (MTF_RANK_POOL=0: made
             // afresh each run), unless another run is using them
};

// How long a rank polls for a message before it blocks, when the ranks run
// on several threads (a blocked rank costs the one that wakes it more).
inline constexpr std::chrono::microseconds kInProcessSpin{30};

// How many threads run the ranks of a world of `size` ranks concurrently.
int rank_threads(int size, RankExecution execution);

// "fibers", "threads" or "pool"; parse_rank_execution throws ValueError
// listing the choices for anything else.
const char* rank_execution_name(RankExecution execution);
RankExecution parse_rank_execution(const std::string& name);

class InProcessWorld : public std::enable_shared_from_this<InProcessWorld> {
 public:
  // `execution` tells how the ranks will run, for the waiting policy.
  static std::shared_ptr<InProcessWorld> create(int size,
                                                RankExecution execution = RankExecution::kThreads);
  virtual ~InProcessWorld() = default;

  virtual int size() const = 0;
  // Rank r's endpoint; it keeps the world alive.
  virtual std::unique_ptr<Transport> transport(int rank) = 0;
  // A store shared by all ranks of this world.
  virtual Store& store() = 0;

  // Fault injection.
  virtual void kill(int rank) = 0;
  virtual void set_delay(std::chrono::microseconds delay) = 0;
};

// Runs body(transport) for every rank of a new world of `size` ranks and
// waits for all. When a rank throws, it is marked lost, so peers waiting on
// it fail quickly with PeerLostError; the first error thrown (the root cause)
// is rethrown after every rank has finished.
void run_in_process(int size, const std::function<void(Transport&)>& body,
                    RankExecution execution = RankExecution::kFibers,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

// A store in memory, shareable between threads and fibers.
std::unique_ptr<Store> make_in_memory_store();

}  // namespace mtf
