// Ring collectives of the cost-only simulator, timed in one pass per ring.
#include "sim/ring_timing.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <tuple>

#include "core/check.h"
#include "mtf/errors.h"
#include "sim/world.h"

namespace mtf::sim {

namespace {
// Rings of at least this many cores move the horizon step by step.
constexpr int kForgetsAsItGoes = 32;
}  // namespace

const RingTimer::Info& RingTimer::info(World& w, const RingKey& key,
                                       const std::vector<RingPassTiming>& passes) {
  auto it = infos_.find(key);
  if (it != infos_.end() && it->second.passes == static_cast<int>(passes.size()) &&
      it->second.ranks == *passes[0].order)
    return it->second;
  Info r;
  r.passes = static_cast<int>(passes.size());
  r.ranks = *passes[0].order;
  const int n = static_cast<int>(r.ranks.size());
  std::vector<int> position(w.cores().size(), -1);
  for (int i = 0; i < n; ++i) position[r.ranks[i]] = i;
  r.next.assign(static_cast<size_t>(r.passes) * n, 0);
  r.routes.assign(static_cast<size_t>(r.passes) * n, nullptr);
  for (int p = 0; p < r.passes && r.one_ring; ++p) {
    const std::vector<int>& order = *passes[p].order;
    if (static_cast<int>(order.size()) != n) {
      r.one_ring = false;
      break;
    }
    for (int k = 0; k < n; ++k) {
      const int from = order[k], to = order[(k + 1) % n];
      if (position[from] < 0 || position[to] < 0) {
        r.one_ring = false;
        break;
      }
      const int i = position[from];
      r.next[p * n + i] = position[to];
      r.routes[p * n + i] = &w.route(from, to);
    }
  }
  return infos_[key] = std::move(r);
}

bool RingTimer::time(World& w, int rank, const std::vector<RingPassTiming>& passes) {
  if (disabled_ || passes.empty() || passes[0].order->size() < 2) return false;
  const RingKey key{passes[0].tag, passes[0].order->front()};
  if (slow(key)) return false;
  auto it = meetings_.find(key);
  if (it == meetings_.end()) {
    const Info& ring = info(w, key, passes);
    if (!ring.one_ring) return false;  // passes over different cores: messages
    it = meetings_.emplace(key, Meeting{}).first;
    it->second.ring = &ring;
    it->second.passes.assign(ring.ranks.size(), nullptr);
  }
  Meeting& m = it->second;
  const Info& ring = *m.ring;
  const int n = static_cast<int>(ring.ranks.size());
  const int at = passes[0].position;
  // Every core of a ring makes the same calls: anything else is a bug.
  MTF_CHECK(static_cast<int>(passes.size()) == ring.passes && at >= 0 && at < n &&
            ring.ranks[at] == rank && !m.passes[at]);
  m.passes[at] = &passes;
  World::Core& me = w.core(rank);
  if (++m.arrived == n) {
    const double start = me.clock;
    run(w, rank, ring, m);
    // Gone before this core yields: its peers may meet again on this key.
    meetings_.erase(key);
    if (me.clock > start) me.behind = true;
    return true;
  }
  wait_until_timed(w, rank, ring.ranks[(at + n - 1) % n], passes[0].tag);
  return true;
}

void RingTimer::run(World& w, int rank, const Info& ring, const Meeting& m) {
  const int n = static_cast<int>(ring.ranks.size());
  const int passes = ring.passes;
  parties_.push_back({(*m.passes[0])[0].tag, ring.ranks[0]});
  const int party = static_cast<int>(parties_.size());
  std::vector<double> clock(n), arrival(static_cast<size_t>(passes) * n);
  for (int i = 0; i < n; ++i) clock[i] = w.core(ring.ranks[i]).clock;
  // A long ring books many steps ahead: the links may forget as it goes
  // (a scan of every core, worth it only then).
  const double outside = n >= kForgetsAsItGoes ? w.earliest_clock_outside(ring.ranks)
                                               : -std::numeric_limits<double>::infinity();
  // Every core's chunks of each pass, checked against what its successor
  // expects; the sizes of the chunks, once (the same on every core).
  const size_t steps = static_cast<size_t>(n - 1);
  std::vector<int> chunk(static_cast<size_t>(passes) * n);
  std::vector<std::vector<size_t>> bytes(passes);
  for (int p = 0; p < passes; ++p) {
    const RingPassTiming& first = (*m.passes[0])[p];
    for (int i = 0; i < n; ++i) {
      const RingPassTiming& mine = (*m.passes[i])[p];
      const RingPassTiming& theirs = (*m.passes[ring.next[p * n + i]])[p];
      if (mine.lo != first.lo || mine.hi != first.hi || mine.element_bytes != first.element_bytes ||
          theirs.recv_chunk != mine.send_chunk) {
        const std::string why =
            detail::str_cat("ring collective (tag ", mine.tag, "): core ", ring.ranks[i],
                            " does not send core ", ring.ranks[ring.next[p * n + i]],
                            " what it expects; the cores called different collectives or sizes");
        w.fail(why);
        throw ValueError(why);
      }
      chunk[p * n + i] = mine.send_chunk;
    }
    for (int c = 0; c < n; ++c) {
      const int64_t len = first.hi - first.lo;
      bytes[p].push_back(static_cast<size_t>(len * (c + 1) / n - len * c / n) *
                         first.element_bytes);
    }
  }
  // Step by step, as the cores would exchange them: every pass's send at the
  // sender's clock, then the receives.
  for (size_t s = 0; s < steps; ++s) {
    for (int i = 0; i < n; ++i) {
      for (int p = 0; p < passes; ++p) {
        const int j = ring.next[p * n + i];
        int& c = chunk[p * n + i];  // this step's, then the next step's
        arrival[p * n + j] = w.transmit(*ring.routes[p * n + i], ring.ranks[i], ring.ranks[j],
                                        bytes[p][c], clock[i], party);
        c = c == 0 ? n - 1 : c - 1;
      }
    }
    double earliest = outside;
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < passes; ++p) clock[j] = std::max(clock[j], arrival[p * n + j]);
      earliest = std::min(earliest, clock[j]);
    }
    // The ring's cores send no earlier than their clocks from here on, and
    // the others no earlier than theirs: links may forget what ended before.
    w.links().horizon = std::max(w.links().horizon, earliest);
  }
  finish(w, rank, ring.ranks, clock);
}

void RingTimer::wait_until_timed(World& w, int rank, int peer, uint64_t tag) {
  World::Core& me = w.core(rank);
  me.ring_timed = false;
  std::unique_lock<boost::fibers::mutex> lock(me.mu);
  while (!me.ring_timed) w.block(me, lock, peer, tag);
}

void RingTimer::finish(World& w, int rank, const std::vector<int>& ranks,
                       const std::vector<double>& clock) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    World::Core& c = w.core(ranks[i]);
    c.clock = clock[i];
    if (ranks[i] == rank) continue;
    c.ring_timed = true;
    w.wake(c, clock[i]);
  }
}

bool RingTimer::time_rounds(World& w, int rank, const ExchangeRoundsTiming& timing) {
  const std::vector<int>& group = *timing.group;
  const int n = static_cast<int>(group.size());
  if (n < 2) return false;
  const RingKey key{timing.tag, group.front()};
  if (slow(key)) return false;
  RoundsMeeting& m = round_meetings_[key];
  if (m.members.empty()) m.members.assign(n, nullptr);
  const int at = timing.position;
  // Every core of a group makes the same calls: anything else is a bug.
  MTF_CHECK(static_cast<int>(m.members.size()) == n && at >= 0 && at < n && group[at] == rank &&
            !m.members[at]);
  m.members[at] = &timing;
  World::Core& me = w.core(rank);
  if (++m.arrived == n) {
    const double start = me.clock;
    run_rounds(w, rank, m);
    round_meetings_.erase(key);  // before this core yields: peers may meet again on this key
    if (me.clock > start) me.behind = true;
    return true;
  }
  wait_until_timed(w, rank, group[(at + n - 1) % n], timing.tag);
  return true;
}

void RingTimer::run_rounds(World& w, int rank, const RoundsMeeting& m) {
  const ExchangeRoundsTiming& first = *m.members[0];
  const std::vector<int>& group = *first.group;
  const int n = static_cast<int>(group.size());
  const size_t rounds = first.rounds.size();
  parties_.push_back({first.tag, group.front()});
  const int party = static_cast<int>(parties_.size());
  position_.resize(w.cores().size(), -1);
  for (int i = 0; i < n; ++i) position_[group[i]] = i;
  auto mismatch = [&](int i, const std::string& what) {
    for (int r : group) position_[r] = -1;
    const std::string why =
        detail::str_cat("collective of rounds (tag ", first.tag, "): core ", group[i], " ", what,
                        "; the cores called different collectives or sizes");
    w.fail(why);
    throw ValueError(why);
  };
  for (int i = 0; i < n; ++i)
    if (m.members[i]->rounds.size() != rounds || *m.members[i]->group != group)
      mismatch(i, "describes other rounds or another group than core " + std::to_string(group[0]));
  // The members' sends in time order (ties: the lower core first, as the
  // scheduler would run them): each member's next send waits for its
  // receive of the round before.
  std::vector<double> clock(n), arrival(rounds * n, -1.0);
  std::vector<size_t> round(n, 0);
  std::vector<bool> waiting(n, false);
  using Turn = std::tuple<double, int, int>;  // clock, core, position
  std::priority_queue<Turn, std::vector<Turn>, std::greater<Turn>> turns;
  auto next_round = [&](int i) {
    if (++round[i] < rounds) turns.emplace(clock[i], group[i], i);
  };
  for (int i = 0; i < n; ++i) {
    clock[i] = w.core(group[i]).clock;
    if (rounds > 0) turns.emplace(clock[i], group[i], i);
  }
  while (!turns.empty()) {
    const int i = std::get<2>(turns.top());
    turns.pop();
    const size_t r = round[i];
    const ExchangeRound& mine = m.members[i]->rounds[r];
    if (mine.send_to >= 0) {
      const int j =
          mine.send_to < static_cast<int>(position_.size()) ? position_[mine.send_to] : -1;
      if (j < 0 || m.members[j]->rounds[r].recv_from != group[i] ||
          m.members[j]->rounds[r].recv_bytes != mine.send_bytes) {
        mismatch(i, detail::str_cat("sends ", mine.send_bytes, " bytes to core ", mine.send_to,
                                    " in round ", r, ", which does not expect them"));
      }
      double& got = arrival[r * n + j];
      got = w.transmit(w.route(group[i], mine.send_to), group[i], mine.send_to, mine.send_bytes,
                       clock[i], party);
      if (waiting[j] && round[j] == r) {
        waiting[j] = false;
        clock[j] = std::max(clock[j], got);
        next_round(j);
      }
    }
    if (mine.recv_from < 0) {
      next_round(i);
    } else if (arrival[r * n + i] >= 0) {
      clock[i] = std::max(clock[i], arrival[r * n + i]);
      next_round(i);
    } else {
      waiting[i] = true;
    }
  }
  for (int i = 0; i < n; ++i)
    if (waiting[i])
      mismatch(i, detail::str_cat("expects a message in round ", round[i], " that nobody sends"));
  for (int r : group) position_[r] = -1;
  finish(w, rank, group, clock);
}

void RingTimer::out_of_order(int a, int b) {
  if (a > 0) late_.insert(parties_[a - 1]);
  if (b > 0) late_.insert(parties_[b - 1]);
}

}  // namespace mtf::sim
