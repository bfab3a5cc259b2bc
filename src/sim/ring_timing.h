// ring_timing.h — how the simulator times a lockstep ring collective
// (Transport::time_ring_passes), and likewise a collective of rounds such as
// recursive doubling (Transport::time_exchange_rounds, timed round by round
// the same way): once every core of the ring has reached it,
// the last to arrive times all their steps in one pass, step by step: at
// step s every core, in ring order, books its messages of that step at its
// clock (World::transmit, first come first served per link), then every
// core's clock becomes the latest of its arrivals. O(n) fiber switches for
// a ring of n cores instead of O(n^2) messages through the scheduler. In
// functional mode the data then moves in untimed messages, so both modes
// time a ring alike.
//
// Other traffic on a ring's links while it runs must be booked in time
// order too. World::transmit reports a booking out of time order between a
// ring timed here and anything else; the engine then runs the step again
// with those rings exchanged message by message (and remembers them), so no
// report depends on when a ring happened to be timed. Internal.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "mtf/transport.h"

namespace mtf::sim {

class World;
struct Route;

// A ring collective on a group: the tag of its first pass and the first
// rank of that pass's order.
using RingKey = std::pair<uint64_t, int>;

class RingTimer {
 public:
  // `slow`: rings to leave to message-by-message exchange.
  explicit RingTimer(const std::set<RingKey>* slow) : slow_(slow) {}

  // Transport::time_ring_passes for core `rank`: false when the ring goes
  // message by message; else waits for the ring's other cores, and the last
  // one to arrive times every core's steps and wakes them.
  bool time(World& w, int rank, const std::vector<RingPassTiming>& passes);
  // Transport::time_exchange_rounds for core `rank`, the same way: round by
  // round, every core's send at its clock, then every core's clock becomes
  // the latest of its own and its receive's arrival.
  bool time_rounds(World& w, int rank, const ExchangeRoundsTiming& timing);

  // World::transmit found messages of parties a and b (0: a message sent by
  // itself, else a ring timed here) booked on one link out of time order.
  void out_of_order(int a, int b);
  // The rings that took part in such bookings.
  const std::set<RingKey>& out_of_order_rings() const { return late_; }
  // Every ring goes message by message from now on.
  void disable() { disabled_ = true; }

 private:
  // A ring's shape, computed once per ring: its cores in the first pass's
  // order, and per pass p and position i (index p * n + i) the position of
  // i's successor and the route to it.
  struct Info {
    int passes = 0;
    std::vector<int> ranks;
    std::vector<int> next;
    std::vector<const Route*> routes;
    bool one_ring = true;  // every pass runs over the same cores
  };
  struct Meeting {
    const Info* ring = nullptr;
    int arrived = 0;
    // By position in the first pass: each core's passes.
    std::vector<const std::vector<RingPassTiming>*> passes;
  };
  const Info& info(World& w, const RingKey& key, const std::vector<RingPassTiming>& passes);
  // Times every core's steps and wakes the cores other than `rank`.
  void run(World& w, int rank, const Info& ring, const Meeting& m);
  struct RoundsMeeting {
    int arrived = 0;
    std::vector<const ExchangeRoundsTiming*> members;  // by position in the group
  };
  void run_rounds(World& w, int rank, const RoundsMeeting& m);
  // Whether the ring or collective `key` goes message by message.
  bool slow(const RingKey& key) const { return disabled_ || (slow_ && slow_->count(key)); }
  // Core `rank`, not the last to arrive: waits until the last one has
  // timed it (`peer` and `tag` name what it waits for in a deadlock report).
  void wait_until_timed(World& w, int rank, int peer, uint64_t tag);
  // Sets the cores' clocks after a timing and wakes those other than `rank`.
  void finish(World& w, int rank, const std::vector<int>& ranks, const std::vector<double>& clock);

  const std::set<RingKey>* slow_;
  bool disabled_ = false;
  std::map<RingKey, Info> infos_;
  std::map<RingKey, Meeting> meetings_;
  std::map<RingKey, RoundsMeeting> round_meetings_;
  std::vector<int> position_;     // run_rounds' scratch: a core's place in the group, or -1
  std::vector<RingKey> parties_;  // party k is parties_[k - 1]
  std::set<RingKey> late_;
};

}  // namespace mtf::sim
