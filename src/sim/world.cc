// The shared state of a simulated run: clocks, links, counters.
#include "sim/world.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "mtf/errors.h"
#include "sim/engine.h"

namespace mtf::sim {

void World::init(int n) {
  cores_ = std::vector<Core>(n);
  links_.free.assign(machine_.num_links(), 0.0);
  links_.bytes.assign(machine_.num_links(), 0);
  links_.log.assign(machine_.num_links(), LinkLog{});
  links_.horizon = 0;
  links_.until_horizon = 0;
  // One more slot for messages sent outside any step (collectives called
  // directly, as the tests do).
  tally_.step_time_sum.assign(program_.steps.size() + 1, 0.0);
  // Every core runs the same steps on slices of the same shapes: time
  // each compute step once.
  compute_time_.assign(program_.steps.size(), 0.0);
  wait_before_.assign(program_.steps.size(), 0.0);
  const double collective_wait = machine_.topology().host_collective_wait();
  double since_collective = 0;  // compute seconds since the last collective step
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    const Step& s = program_.steps[i];
    if (s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit) {
      compute_time_[i] = step_compute_time(program_, s, machine_.topology());
      since_collective += compute_time_[i];
    } else {
      const Topology& topo = machine_.topology();
      wait_before_[i] = collective_wait + topo.host_collective_wake(since_collective) +
                        topo.host_collective_skew(since_collective);
      since_collective = 0;
      if (s.kind == Step::Kind::kHalo) {
        compute_time_[i] = halo_copy_time(program_, s, machine_.topology());
        since_collective = compute_time_[i];  // the copies follow the exchange
      }
    }
  }
  tally_.step_bytes.assign(program_.steps.size() + 1, 0);
  for (Core& c : cores_) c.step = program_.steps.size();
  running_ = n;
  const Topology& topo = machine_.topology();
  machine_of_rank_.clear();
  if (topo.network == Topology::Network::kSwitched && topo.nodes > 1) {
    std::vector<int> first(topo.nodes, -1);
    machine_of_rank_.resize(n);
    for (int r = 0; r < n; ++r) {
      const int node = machine_.node_of(mapping_.physical[r]);
      if (first[node] < 0) first[node] = r;
      machine_of_rank_[r] = first[node];
    }
  }
}

double World::earliest_clock_outside(const std::vector<int>& ranks) {
  member_scratch_.assign(cores_.size(), 0);
  for (int r : ranks) member_scratch_[r] = 1;
  double earliest = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < cores_.size(); ++r)
    if (!member_scratch_[r] && !cores_[r].done) earliest = std::min(earliest, cores_[r].clock);
  return earliest;
}

const Route& World::route(int from, int to) {
  const int64_t key = static_cast<int64_t>(from) * static_cast<int64_t>(cores_.size()) + to;
  auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  Route r;
  r.pipelined = machine_.topology().network == Topology::Network::kSwitched;
  machine_.route(mapping_.physical[from], mapping_.physical[to], &r.links);
  for (int l : r.links) {
    r.latency += machine_.latency(l);
    r.bandwidth =
        r.bandwidth == 0 ? machine_.bandwidth(l) : std::min(r.bandwidth, machine_.bandwidth(l));
  }
  return routes_.emplace(key, std::move(r)).first->second;
}

void LinkLog::forget_before(double horizon) {
  if (horizon <= forgot_at) return;
  forgot_at = horizon;
  if (first == static_cast<int>(entries.size()) || entries[first].end >= horizon) return;
  // Bookings are busy intervals in time order: those that ended before the
  // horizon (and so were sent before it) are a prefix, found without
  // touching each.
  const auto done = std::lower_bound(entries.begin() + first, entries.end(), horizon,
                                     [](const Booking& b, double h) { return b.end < h; });
  if (done == entries.begin() + first) return;
  evicted_end = std::max(evicted_end, (done - 1)->end);
  first = static_cast<int>(done - entries.begin());
  if (first == static_cast<int>(entries.size())) {
    entries.clear();
    first = 0;
  }
}

double LinkLog::fit(double sent, int party, double earliest, double serialize, bool ties_unordered,
                    int* at) const {
  const int count = this->count();
  if (sent < evicted_sent) return -1;  // what it would meet is forgotten
  if (count == 0) {
    *at = 0;
    return std::max(earliest, evicted_end);
  }
  const Booking& last = this->at(count - 1);
  // In time order, or a party's own bookings (time order for messages sent
  // by themselves, ring order for a ring's): after everything. Messages
  // sent at the same instant are in no order when ties_unordered.
  const bool tie = ties_unordered && sent == last.sent;
  if (sent > last.sent || (sent == last.sent && !tie) || (!tie && last.party == party)) {
    *at = count;
    return std::max(earliest, last.end);
  }
  // Where time order puts it: after the last booking sent before it (at
  // the same instant too, unless ties are unordered), which is the first
  // position from which every booking was sent after it.
  int lo = 0, hi = count - 1;  // the last booking was sent after it (above)
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const double from = this->at(mid).sent_from_here;
    if (from > sent || (tie && from == sent)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const int p = lo;
  double start = std::max(earliest, p ? this->at(p - 1).end : evicted_end);
  for (int i = p; i < count; ++i) {
    if (start + serialize <= this->at(i).start) {
      *at = i;
      return start;
    }
    start = std::max(start, this->at(i).end);
  }
  *at = count;
  return start;
}

void LinkLog::insert(int at, const Booking& b) {
  if (count() == kMaxKept) {
    evicted_end = std::max(evicted_end, entries[first].end);
    evicted_sent = std::max(evicted_sent, entries[first].sent);
    ++first;
    if (--at < 0) at = 0;
  }
  // Drop the forgotten prefix once it is as long as what is live.
  if (first > 0 && first >= count()) {
    entries.erase(entries.begin(), entries.begin() + first);
    first = 0;
  }
  const int n = count();
  Booking& placed = *entries.insert(entries.begin() + first + at, b);
  placed.sent_from_here =
      at < n ? std::min(b.sent, entries[first + at + 1].sent_from_here) : b.sent;
  for (int k = first + at - 1; k >= first && entries[k].sent_from_here > b.sent; --k)
    entries[k].sent_from_here = b.sent;
}

double World::transmit(const Route& r, int from, int to, size_t bytes, double sent, int party) {
  Core& me = cores_[from];
  if (--links_.until_horizon < 0) {
    // Every so many messages (amortized O(1) each): the latest time no
    // running core's clock is behind. Clocks only grow, so a stale horizon
    // is merely conservative.
    double h = me.clock;
    for (const Core& c : cores_)
      if (!c.done) h = std::min(h, c.clock);
    links_.horizon = std::max(links_.horizon, h);
    links_.until_horizon = 4 * static_cast<int64_t>(cores_.size());
  }
  const double serialize = r.bandwidth > 0 ? static_cast<double>(bytes) / r.bandwidth : 0;
  const size_t links = r.links.size();
  std::vector<int>& at = place_scratch_;
  std::vector<double>& starts = start_scratch_;
  at.resize(links);
  starts.resize(links);
  bool known = true;
  for (int l : r.links) links_.log[l].forget_before(links_.horizon);
  if (r.pipelined) {
    // Each link on its own, none before the previous one started.
    double start = sent;
    for (size_t k = 0; k < links && known; ++k) {
      start = links_.log[r.links[k]].fit(sent, party, start, serialize, true, &at[k]);
      known = start >= 0;
      starts[k] = start;
    }
  } else {
    // The earliest start at which every link of the route has room.
    double start = sent;
    for (int round = 0; known; ++round) {
      double latest = start;
      for (size_t k = 0; k < links && known; ++k) {
        const double s = links_.log[r.links[k]].fit(sent, party, start, serialize, false, &at[k]);
        known = s >= 0 && round <= 4 * LinkLog::kMaxKept;
        latest = std::max(latest, s);
      }
      if (latest == start) break;
      start = latest;
    }
    std::fill(starts.begin(), starts.end(), start);
  }
  if (!known) {
    // Sent before what the links still remember, behind a ring timed ahead:
    // this attempt's figures are discarded (the rings involved go message
    // by message next time); book it after everything.
    for (int l : r.links)
      for (int i = 0; i < links_.log[l].count(); ++i)
        rings_.out_of_order(party, links_.log[l].at(i).party);
    // Each link after what it holds (pipelined: none before the previous
    // one's start); a whole route at the latest of them.
    double start = sent;
    for (size_t k = 0; k < links; ++k) {
      starts[k] = start = std::max(start, links_.free[r.links[k]]);
      at[k] = links_.log[r.links[k]].count();
    }
    if (!r.pipelined) std::fill(starts.begin(), starts.end(), start);
  }
  static const std::string kOutside = "message";
  const std::string* label = nullptr;
  if (tracing_ && bytes)
    label = me.step < program_.steps.size() ? &program_.steps[me.step].op->name() : &kOutside;
  std::string args;
  if (label)
    args = detail::str_cat("\"op\":\"", json_escape(*label), "\",\"bytes\":", bytes,
                           ",\"from_core\":", from, ",\"to_core\":", to);
  for (size_t k = 0; k < links; ++k) {
    const int l = r.links[k];
    const double end = starts[k] + serialize;
    links_.log[l].insert(at[k], {sent, starts[k], end, party});
    links_.free[l] = std::max(links_.free[l], end);
    links_.bytes[l] += static_cast<int64_t>(bytes);
    if (label) tally_.events.push_back({1, l, *label, starts[k], end, args});
  }
  const double arrival = (links ? starts.back() : sent) + r.latency + serialize;
  me.bytes_sent += static_cast<int64_t>(bytes);
  tally_.step_bytes[me.step] += static_cast<int64_t>(bytes);
  ++tally_.messages;
  if (label) tally_.flows.push_back({from, to, sent, arrival});
  return arrival;
}

void World::block(Core& c, std::unique_lock<boost::fibers::mutex>& lock, int peer, uint64_t tag) {
  if (failed_) throw PeerLostError("simulation stopped: " + failure_);
  c.waiting = true;
  c.wait_peer = peer;
  c.wait_tag = tag;
  ++blocked_;
  if (check_deadlock()) throw TimeoutError(failure_);  // fail() woke us all
  if (!failed_) c.cv.wait(lock);
  if (c.waiting) {  // woken by something else than wake()
    --blocked_;
    c.waiting = false;
  }
}

void World::fail(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  failure_ = why;
  for (Core& c : cores_)
    if (c.waiting) wake(c, c.clock);
}

void World::wake(Core& c, double at) {
  c.waiting = false;
  --blocked_;
  c.props->key = std::max(c.clock, at);
  c.cv.notify_all();
}

bool World::check_deadlock() {
  if (failed_ || running_ == 0 || blocked_ < running_) return false;
  std::string who;
  int listed = 0;
  for (size_t r = 0; r < cores_.size() && listed < 8; ++r) {
    if (!cores_[r].waiting) continue;
    const size_t step = cores_[r].step;
    who += detail::str_cat(listed ? "; " : " ", "core ", r, " waits for core ", cores_[r].wait_peer,
                           " in ",
                           step < program_.steps.size() ? program_.steps[step].op->name()
                                                        : std::string("a direct call"));
    ++listed;
  }
  fail(
      "simulation deadlock: every running core waits for a message nobody will send "
      "(the cores called different collectives or sizes):" +
      who);
  return true;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    r += ch;
  }
  return r;
}

}  // namespace mtf::sim
