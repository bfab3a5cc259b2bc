// In-process transport: one mailbox per rank, keyed by (sender, tag), with
// Boost.Fiber synchronisation so ranks may be fibers or threads.
#include "mtf/in_process_transport.h"

#include <algorithm>
#include <atomic>
#include <boost/fiber/all.hpp>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "core/buffer_pool.h"
#include "core/check.h"
#include "core/cpus.h"
#include "mtf/errors.h"

namespace mtf {

namespace {

using Clock = std::chrono::steady_clock;

// Receives of at least this size are posted by exchange(), and only sends of
// at least this size look for a posted receive.
constexpr size_t kPostedReceiveBytes = 64 * 1024;
using Lock = std::unique_lock<boost::fibers::mutex>;

struct Message {
  std::shared_ptr<detail::Buffer> data;
  size_t bytes = 0;
  Clock::time_point ready;
};

// A receive posted by an exchange: a sender that finds it (and nothing older
// queued for it) copies straight into its buffer, outside the lock (filling).
struct Posted {
  int src;
  uint64_t tag;
  void* data;
  size_t bytes;
  bool filling = false;
  bool done = false;
};

struct Mailbox {
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  std::map<std::pair<int, uint64_t>, std::deque<Message>> queues;
  std::vector<Posted*> posted;  // the owner's posted receives, in posting order
  // Bumped (under mu) by every change a waiting owner may be waiting for:
  // spinning owners watch it without taking mu, which senders then find free.
  std::atomic<uint64_t> arrivals{0};
};

class World final : public InProcessWorld {
 public:
  World(int n, RankExecution execution)
      : spin_(rank_threads(n, execution) > 1),
        yield_thread_(rank_threads(n, execution) > available_cpus()),
        dead_(n),
        store_(make_in_memory_store()) {
    for (int i = 0; i < n; ++i) boxes_.push_back(std::make_unique<Mailbox>());
    for (auto& d : dead_) d = false;
  }

  int size() const override { return static_cast<int>(boxes_.size()); }
  std::unique_ptr<Transport> transport(int rank) override;
  Store& store() override { return *store_; }

  void kill(int rank) override {
    MTF_CHECK(rank >= 0 && rank < size());
    dead_[rank] = true;
    for (auto& box : boxes_) {
      Lock lock(box->mu);
      box->arrivals.fetch_add(1, std::memory_order_release);
      box->cv.notify_all();
    }
  }
  void set_delay(std::chrono::microseconds d) override { delay_us_ = d.count(); }

  void deliver(int src, int dst, uint64_t tag, const void* data, size_t bytes) {
    if (dead_[src])
      throw PeerLostError(detail::str_cat("rank ", src, " was killed; it cannot send"));
    if (dead_[dst]) {
      throw PeerLostError(detail::str_cat("rank ", src, " cannot send to rank ", dst, " (tag ", tag,
                                          "): rank ", dst, " is lost"));
    }
    Mailbox& box = *boxes_[dst];
    if (bytes >= kPostedReceiveBytes && delay_us_.load() == 0) {
      Lock lock(box.mu);
      auto q = box.queues.find({src, tag});
      if (q == box.queues.end() || q->second.empty()) {
        for (Posted* p : box.posted) {
          if (p->src != src || p->tag != tag || p->filling || p->done) continue;
          if (p->bytes != bytes) break;  // queued: the receiver reports the mismatch
          p->filling = true;
          lock.unlock();
          if (bytes) std::memcpy(p->data, data, bytes);
          lock.lock();
          p->filling = false;
          p->done = true;
          box.arrivals.fetch_add(1, std::memory_order_release);
          box.cv.notify_all();
          return;
        }
      }
    }
    Message m;
    m.data = detail::allocate_buffer(bytes);
    m.bytes = bytes;
    if (bytes) std::memcpy(m.data->data, data, bytes);
    m.ready = Clock::now() + std::chrono::microseconds(delay_us_.load());
    Lock lock(box.mu);
    box.queues[{src, tag}].push_back(std::move(m));
    box.arrivals.fetch_add(1, std::memory_order_release);
    box.cv.notify_all();
  }

  // Receives `recvs` for rank me after running `send_all` (its sends),
  // taking queued messages in order per (sender, tag). Receives of at least
  // kPostedReceiveBytes are posted before the sends, so a peer's send copies
  // straight into them.
  void exchange(int me, const std::vector<RecvSpec>& recvs, const std::function<void()>& send_all,
                std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    Mailbox& box = *boxes_[me];
    std::vector<Posted> posted;
    posted.reserve(recvs.size());
    for (const RecvSpec& r : recvs) posted.push_back({r.peer, r.tag, r.data, r.bytes});
    // Unposts on every way out, after any copy into our buffers has ended.
    struct Unpost {
      Mailbox& box;
      std::vector<Posted>& posted;
      bool any = false;
      ~Unpost() {
        if (!any) return;
        Lock lock(box.mu);
        while (std::any_of(posted.begin(), posted.end(), [](const Posted& p) { return p.filling; }))
          box.cv.wait(lock);
        auto ours = [&](Posted* p) {
          return p >= posted.data() && p < posted.data() + posted.size();
        };
        box.posted.erase(std::remove_if(box.posted.begin(), box.posted.end(), ours),
                         box.posted.end());
      }
    } unpost{box, posted};
    {
      Lock lock(box.mu);
      for (Posted& p : posted) {
        p.done = try_take(box, p.src, p.tag, p.data, p.bytes, me);
        if (!p.done && p.bytes >= kPostedReceiveBytes) {
          box.posted.push_back(&p);
          unpost.any = true;
        }
      }
    }
    send_all();
    // Poll briefly before blocking: a blocking cross-core wake-up costs
    // ~25-30 us here, far more than a short spin when the message is about to
    // arrive. Each poll yields to other fibers of this thread and, with more
    // rank threads than CPUs, to other threads of this core, so a spinning
    // rank never starves its peers (sched_yield costs a microsecond and more
    // on a VM: with a CPU per thread, it only delays the poll).
    const auto spin_until = Clock::now() + (spin_ ? kInProcessSpin : std::chrono::microseconds(0));
    Lock lock(box.mu);
    while (true) {
      for (Posted& p : posted)
        if (!p.done && !p.filling) p.done = try_take(box, p.src, p.tag, p.data, p.bytes, me);
      const auto waiting =
          std::find_if(posted.begin(), posted.end(), [](const Posted& p) { return !p.done; });
      if (waiting == posted.end()) return;
      const int src = waiting->src;
      if (dead_[me]) throw PeerLostError(detail::str_cat("rank ", me, " was killed"));
      if (dead_[src] && !waiting->filling) {
        throw PeerLostError(detail::str_cat("rank ", me, " waited for a message from rank ", src,
                                            " (tag ", waiting->tag, ", ", waiting->bytes,
                                            " bytes), but rank ", src, " is lost"));
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
        throw TimeoutError(detail::str_cat(
            "rank ", me, " timed out after ", waited, " ms waiting for a message from rank ", src,
            " (tag ", waiting->tag, ", ", waiting->bytes,
            " bytes); the peer is stuck, slow, or running a different "
            "program (raise the timeout if it is only slow)"));
      }
      if (now < spin_until) {
        // Watch the mailbox without holding its lock until something
        // arrives (or the spin ends): a sender never waits for the lock.
        const uint64_t seen = box.arrivals.load(std::memory_order_acquire);
        lock.unlock();
        do {
          boost::this_fiber::yield();
          if (yield_thread_) {
            std::this_thread::yield();
          } else {
            spin_pause();
          }
        } while (box.arrivals.load(std::memory_order_acquire) == seen && Clock::now() < spin_until);
        lock.lock();
        continue;
      }
      auto wake = deadline;
      for (const Posted& p : posted) {
        if (p.done) continue;
        auto it = box.queues.find({p.src, p.tag});
        if (it != box.queues.end() && !it->second.empty())
          wake = std::min(wake, it->second.front().ready);
      }
      box.cv.wait_until(lock, wake);
    }
  }

 private:
  // REQUIRES: box.mu held.
  bool try_take(Mailbox& box, int src, uint64_t tag, void* data, size_t bytes, int me) {
    auto it = box.queues.find({src, tag});
    if (it == box.queues.end() || it->second.empty()) return false;
    Message& m = it->second.front();
    if (m.ready > Clock::now()) return false;
    if (m.bytes != bytes) {
      throw ValueError(detail::str_cat("rank ", me, " expected ", bytes, " bytes from rank ", src,
                                       " (tag ", tag, ") but the message has ", m.bytes,
                                       " bytes; the ranks disagree about the data they exchange"));
    }
    if (bytes) std::memcpy(data, m.data->data, bytes);
    it->second.pop_front();
    if (it->second.empty()) box.queues.erase(it);
    return true;
  }

  const bool spin_;
  const bool yield_thread_;  // more rank threads than CPUs
  std::vector<std::unique_ptr<Mailbox>> boxes_;
  std::vector<std::atomic<bool>> dead_;
  std::atomic<int64_t> delay_us_{0};
  std::unique_ptr<Store> store_;
};

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<World> world, int rank)
      : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    check_peer(peer, "send");
    world_->deliver(rank_, peer, tag, data, bytes);
  }
  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    exchange({}, {RecvSpec{peer, tag, data, bytes}});
  }
  void exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs) override {
    for (const RecvSpec& r : recvs) check_peer(r.peer, "recv");
    for (const SendSpec& x : sends) check_peer(x.peer, "send");
    world_->exchange(
        rank_, recvs,
        [&] {
          for (const SendSpec& x : sends) world_->deliver(rank_, x.peer, x.tag, x.data, x.bytes);
        },
        timeout());
  }

 private:
  std::shared_ptr<World> world_;
  int rank_;
};

std::unique_ptr<Transport> World::transport(int rank) {
  if (rank < 0 || rank >= size()) {
    throw ValueError(
        detail::str_cat("InProcessWorld::transport: rank ", rank, " is outside 0..", size() - 1));
  }
  return std::make_unique<InProcessTransport>(std::static_pointer_cast<World>(shared_from_this()),
                                              rank);
}

class InMemoryStore final : public Store {
 public:
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    Lock lock(mu_);
    values_[key] = value;
    cv_.notify_all();
  }
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    Lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; })) {
      throw TimeoutError(
          detail::str_cat("store: key \"", key, "\" was not set within ", timeout.count(), " ms"));
    }
    return values_[key];
  }
  int64_t add(const std::string& key, int64_t delta) override {
    Lock lock(mu_);
    int64_t v = 0;
    auto it = values_.find(key);
    if (it != values_.end() && it->second.size() == sizeof(int64_t))
      std::memcpy(&v, it->second.data(), sizeof v);
    v += delta;
    std::vector<uint8_t> bytes(sizeof v);
    std::memcpy(bytes.data(), &v, sizeof v);
    values_[key] = bytes;
    cv_.notify_all();
    return v;
  }

 private:
  boost::fibers::mutex mu_;
  boost::fibers::condition_variable cv_;
  std::map<std::string, std::vector<uint8_t>> values_;
};

}  // namespace

std::shared_ptr<InProcessWorld> InProcessWorld::create(int size, RankExecution execution) {
  if (size < 1) throw ValueError(detail::str_cat("InProcessWorld: size ", size, " must be >= 1"));
  return std::make_shared<World>(size, execution);
}

std::unique_ptr<Store> make_in_memory_store() { return std::make_unique<InMemoryStore>(); }

}  // namespace mtf
