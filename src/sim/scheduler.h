// scheduler.h — a Boost.Fiber scheduling algorithm that always runs the
// ready fiber with the smallest simulated time (ties: the smaller `order`,
// then first come), so a simulation's events happen in time order.
// A fiber sets its own key (SimProps) before it yields or blocks; a fiber
// that wakes another sets the sleeper's key before notifying it. Internal.
#pragma once

#include <boost/fiber/all.hpp>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <queue>
#include <vector>

namespace mtf::sim {

class SimProps : public boost::fibers::fiber_properties {
 public:
  explicit SimProps(boost::fibers::context* ctx) : fiber_properties(ctx) {}
  // Zero until the fiber sets it: a fiber not yet started runs before any
  // that has advanced its clock, so every core starts at time zero.
  double key = 0;
  int64_t order = std::numeric_limits<int64_t>::max();
};

class TimeOrderedScheduler : public boost::fibers::algo::algorithm_with_properties<SimProps> {
 public:
  void awakened(boost::fibers::context* ctx, SimProps& props) noexcept override {
    ready_.push({props.key, props.order, next_seq_++, ctx});
  }
  boost::fibers::context* pick_next() noexcept override {
    if (ready_.empty()) return nullptr;
    boost::fibers::context* ctx = ready_.top().ctx;
    ready_.pop();
    return ctx;
  }
  bool has_ready_fibers() const noexcept override { return !ready_.empty(); }
  void property_change(boost::fibers::context*, SimProps&) noexcept override {}
  void suspend_until(std::chrono::steady_clock::time_point const& until) noexcept override {
    std::unique_lock<std::mutex> lock(mu_);
    if (until == std::chrono::steady_clock::time_point::max()) {
      cv_.wait(lock, [this] { return flag_; });
    } else {
      cv_.wait_until(lock, until, [this] { return flag_; });
    }
    flag_ = false;
  }
  void notify() noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    flag_ = true;
    cv_.notify_all();
  }

 private:
  struct Entry {
    double key;
    int64_t order;
    uint64_t seq;
    boost::fibers::context* ctx;
    bool operator>(const Entry& o) const {
      if (key != o.key) return key > o.key;
      if (order != o.order) return order > o.order;
      return seq > o.seq;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready_;
  uint64_t next_seq_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool flag_ = false;
};

}  // namespace mtf::sim
