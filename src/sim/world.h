// world.h — what the simulated cores of one run share: their clocks and
// inboxes, the links' reservations (LinkBook), the counters of the report
// and the trace (RunTally), and the timing of one message over its route. All cores run as
// fibers on one thread, so nothing here is locked beyond what the fiber
// condition variables need. Internal to the simulator.
#pragma once

#include <boost/fiber/all.hpp>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "lowering/program.h"
#include "sim/machine.h"
#include "sim/ring_timing.h"
#include "sim/scheduler.h"

namespace mtf::sim {

struct Message {
  double arrival = 0;
  size_t bytes = 0;
  std::vector<char> data;
};

struct InboxKey {
  int peer;
  uint64_t tag;
  bool operator==(const InboxKey& o) const { return peer == o.peer && tag == o.tag; }
};
struct InboxKeyHash {
  size_t operator()(const InboxKey& k) const {
    return static_cast<size_t>((k.tag * 0x9E3779B97F4A7C15ULL) ^ static_cast<uint64_t>(k.peer));
  }
};

// A route between two logical processors, with what a message over it pays.
// A message holds every link of a route at once (a torus's cut-through
// path), or, when `pipelined` (a switch's ports: packets of other flows
// interleave), books each link on its own, none before the previous one.
struct Route {
  std::vector<int> links;
  double latency = 0;
  double bandwidth = 0;  // the slowest link's
  bool pipelined = false;
};

struct TraceEvent {
  int pid;  // 0: cores, 1: links
  int tid;
  std::string name;
  double start, end;
  std::string args;  // the members of its "args" object, as JSON
};

// A message's arrow in the trace: from its sender's core when sent to its
// receiver's core when it arrives.
struct TraceFlow {
  int from, to;
  double sent, arrived;
};

// The bookings of one directed link that later traffic can still meet, in
// time order (busy intervals that do not overlap), so that a booking that
// comes late (a ring timed ahead of other traffic, or other traffic after
// it) can be placed where time order puts it, if it fits in the gap there
// without moving anything. Bookings that ended before the run's horizon (no
// core can send before it any more) are forgotten: nothing sent later goes
// before them. At most kMaxKept are kept; a booking sent before one
// dropped for room is reported as unknown.
struct LinkLog {
  struct Booking {
    double sent, start, end;
    int party;  // 0: a message sent by itself; k: the k-th ring RingTimer timed
    // The earliest send among this booking and every later one (set by
    // insert): where time order puts a late booking is a binary search.
    double sent_from_here = 0;
  };
  static constexpr int kMaxKept = 2048;
  std::vector<Booking> entries;  // live from entries[first]
  int first = 0;
  double evicted_end = 0;    // the latest end among the forgotten
  double evicted_sent = -1;  // the latest send among those dropped for room
  double forgot_at = 0;      // the horizon of the last forget_before
  int count() const { return static_cast<int>(entries.size()) - first; }
  const Booking& at(int i) const { return entries[first + i]; }

  // Forgets the leading bookings that ended before `horizon`.
  void forget_before(double horizon);
  // The earliest start, no earlier than `earliest`, of a booking of
  // `serialize` seconds sent at `sent` by `party`: after everything when it
  // comes in time order (or after its own party's); else in the first gap
  // from where time order puts it that holds it, without moving any kept
  // booking. With ties_unordered (a switch port, whose flows interleave),
  // bookings sent at the same instant as it are no obstacle either: it may
  // take a gap before them. *at: where it goes among the live bookings. -1
  // when it was sent before a booking dropped for room (what it would meet
  // is forgotten).
  double fit(double sent, int party, double earliest, double serialize, bool ties_unordered,
             int* at) const;
  void insert(int at, const Booking& b);
};

// Each directed link's state over a run: when it is free, the bytes it
// carried, its kept bookings, and the horizon before which no core sends
// any more (a lower bound of the running cores' clocks, refreshed every so
// many messages: the links forget bookings sent before it).
struct LinkBook {
  std::vector<double> free;
  std::vector<int64_t> bytes;
  std::vector<LinkLog> log;
  double horizon = 0;
  int64_t until_horizon = 0;  // messages before the next refresh
};

// What a run's report and trace count: per step (one more slot for messages
// sent outside any step, as tests' direct collectives are), over cores.
struct RunTally {
  std::vector<double> step_time_sum;
  std::vector<int64_t> step_bytes;
  int64_t messages = 0;
  std::vector<TraceEvent> events;
  std::vector<TraceFlow> flows;
};

// What the simulated cores of one run share. Made, then init(n) before the
// cores run; read for the report after. Its parts: the cores (clocks,
// inboxes, waits), the links (LinkBook), the tally (RunTally) and the
// per-step costs fixed for the run.
class World {
 public:
  struct Core {
    double clock = 0;
    SimProps* props = nullptr;
    boost::fibers::mutex mu;
    boost::fibers::condition_variable cv;
    // Messages not yet received, by (sender, tag); emptied entries are erased.
    std::unordered_map<InboxKey, std::deque<Message>, InboxKeyHash> inbox;
    bool waiting = false;
    int wait_peer = -1;
    uint64_t wait_tag = 0;
    bool ring_timed = false;  // set when RingTimer has timed the ring it waits in
    size_t step = 0;          // the step being run
    double compute = 0, communication = 0;
    int64_t bytes_sent = 0;
    bool done = false;    // core_main returned or threw
    bool behind = false;  // its clock moved since it last took its turn
  };

  // slow_rings: rings RingTimer must leave to message-by-message exchange.
  World(const Program& p, const Machine& m, const CoreMapping& map, bool data, bool trace,
        const std::set<RingKey>* slow_rings)
      : program_(p),
        machine_(m),
        mapping_(map),
        carries_data_(data),
        tracing_(trace),
        rings_(slow_rings) {}

  // n cores at time 0, the links free, every compute step timed once.
  void init(int n);

  const Program& program() const { return program_; }
  const Machine& machine() const { return machine_; }
  const CoreMapping& mapping() const { return mapping_; }
  bool carries_data() const { return carries_data_; }
  bool tracing() const { return tracing_; }

  int size() const { return static_cast<int>(cores_.size()); }
  Core& core(int rank) { return cores_[static_cast<size_t>(rank)]; }
  const std::vector<Core>& cores() const { return cores_; }
  // Per step: its roofline time on one core (compute and split steps; a
  // halo step's copies, halo_copy_time); what a core loses before it (a
  // collective on a host with more ranks than CPUs,
  // Topology::host_collective_wait; waking peers that blocked while the
  // ranks computed apart, Topology::host_collective_wake).
  double compute_time(size_t step) const { return compute_time_[step]; }
  double wait_before(size_t step) const { return wait_before_[step]; }
  // Switched machines of several nodes: each logical processor's node,
  // numbered by its lowest processor (Transport::machines()); else empty.
  const std::vector<int>& machine_of_rank() const { return machine_of_rank_; }

  LinkBook& links() { return links_; }
  const LinkBook& links() const { return links_; }
  RunTally& tally() { return tally_; }
  const RunTally& tally() const { return tally_; }
  RingTimer& rings() { return rings_; }

  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }

  // The earliest clock of the running cores other than `ranks` (infinity if
  // none): while a collective timed at once runs, the others stand still.
  double earliest_clock_outside(const std::vector<int>& ranks);
  // The route between two logical processors (computed once; references stay valid).
  const Route& route(int from, int to);
  // Books a message of `bytes` from `from` to `to`, sent at time `sent` by
  // `party` (0: a message of its own), over `route`: it starts when every
  // link of the route is free and holds them for bytes / bandwidth (first
  // come, first served in time order); returns its arrival. Counts it for
  // the report and the trace. Messages are booked in time order, except
  // that a ring timed at once books its steps ahead: a message sent before
  // another party's run of bookings on a link fits in before it when it
  // ends before that run starts (as it would have been booked first);
  // otherwise the order matters, and `rings` is told (see RingTimer).
  double transmit(const Route& route, int from, int to, size_t bytes, double sent, int party);

  // Makes the current fiber wait its turn at its (new) clock.
  void yield_at(Core& c) {
    c.behind = false;
    c.props->key = c.clock;
    boost::this_fiber::yield();
  }
  // Before a core books links or meets a ring: its turn at its clock, if
  // that moved since its last turn. Compute steps and receives only move a
  // core's own clock, so they need not yield at once: fewer fiber switches,
  // the same bookings in the same time order.
  void take_turn(Core& c) {
    if (c.behind) yield_at(c);
  }
  // Waits once on c's condition variable (held by `lock`) for a message
  // from `peer` with `tag` (or a ring's timing), counted as blocked so that
  // cores all waiting on each other are a deadlock error, not a hang.
  // Throws when the run has stopped.
  void block(Core& c, std::unique_lock<boost::fibers::mutex>& lock, int peer, uint64_t tag);
  // Stops the run: every waiting core wakes and throws.
  void fail(const std::string& why);
  // Makes a waiting core ready at simulated time `at`. It stops counting as
  // blocked now, not when it next runs, so the deadlock check stays exact.
  void wake(Core& c, double at);
  // A core's core_main has returned or thrown: it no longer runs.
  void finish(Core& c) {
    c.done = true;
    --running_;
  }
  // Called when a core blocks or finishes: if every running core is waiting,
  // nothing can ever wake them. Returns true when it found that so.
  bool check_deadlock();

 private:
  const Program& program_;
  const Machine& machine_;
  const CoreMapping& mapping_;
  const bool carries_data_;
  const bool tracing_;
  std::vector<Core> cores_;
  LinkBook links_;
  RunTally tally_;
  std::vector<double> compute_time_;  // per step
  std::vector<double> wait_before_;   // per step
  int running_ = 0, blocked_ = 0;     // cores still running; of those, waiting
  bool failed_ = false;
  std::string failure_;
  std::unordered_map<int64_t, Route> routes_;  // by from * cores + to
  std::vector<int> machine_of_rank_;
  std::vector<int> place_scratch_;     // transmit's
  std::vector<double> start_scratch_;  // transmit's
  std::vector<char> member_scratch_;   // earliest_clock_outside's
  RingTimer rings_;
};

std::string json_escape(const std::string& s);

}  // namespace mtf::sim
