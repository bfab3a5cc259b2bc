// The simulation engine: simulated cores as fibers, a transport that times
// messages over the machine's links, and the report.
#include "sim/engine.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <thread>
#include <unordered_map>

#include "core/check.h"
#include "mtf/errors.h"
#include "sim/scheduler.h"
#include "transport/first_error.h"

namespace mtf::sim {
namespace {

constexpr size_t kFiberStackBytes = 256 * 1024;

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
struct Route {
  std::vector<int> links;
  double latency = 0;
  double bandwidth = 0;  // the slowest link's
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

// Everything the cores of one run share. All cores run on one thread, so no
// locking beyond what the fiber condition variables need.
struct World {
  World(const Program& p, const Machine& m, const CoreMapping& map, bool data, bool trace)
      : program(p), machine(m), mapping(map), carries_data(data), tracing(trace) {}

  const Program& program;
  const Machine& machine;
  const CoreMapping& mapping;
  const bool carries_data;
  const bool tracing;

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
    size_t step = 0;  // the step being run
    double compute = 0, communication = 0;
    int64_t bytes_sent = 0;
  };
  std::vector<Core> cores;
  std::vector<double> link_free;
  std::vector<int64_t> link_bytes;
  std::vector<double> step_time_sum;  // per step, over cores
  std::vector<double> compute_time;   // per step: its roofline time on one core
  std::vector<int64_t> step_bytes;    // per step, over cores
  std::vector<TraceEvent> events;
  std::vector<TraceFlow> flows;
  int64_t messages = 0;
  int running = 0, blocked = 0;
  bool failed = false;
  std::string failure;
  std::unordered_map<int64_t, Route> routes;  // by from * cores + to

  const Route& route(int from, int to) {
    const int64_t key = static_cast<int64_t>(from) * static_cast<int64_t>(cores.size()) + to;
    auto it = routes.find(key);
    if (it != routes.end()) return it->second;
    Route r;
    machine.route(mapping.physical[from], mapping.physical[to], &r.links);
    for (int l : r.links) {
      r.latency += machine.latency(l);
      r.bandwidth =
          r.bandwidth == 0 ? machine.bandwidth(l) : std::min(r.bandwidth, machine.bandwidth(l));
    }
    return routes.emplace(key, std::move(r)).first->second;
  }

  void init(int n) {
    cores = std::vector<Core>(n);
    link_free.assign(machine.num_links(), 0.0);
    link_bytes.assign(machine.num_links(), 0);
    // One more slot for messages sent outside any step (collectives called
    // directly, as the tests do).
    step_time_sum.assign(program.steps.size() + 1, 0.0);
    // Every core runs the same steps on slices of the same shapes: time
    // each compute step once.
    compute_time.assign(program.steps.size(), 0.0);
    for (size_t i = 0; i < program.steps.size(); ++i) {
      const Step& s = program.steps[i];
      if (s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit)
        compute_time[i] = step_compute_time(program, s, machine.topology());
    }
    step_bytes.assign(program.steps.size() + 1, 0);
    for (Core& c : cores) c.step = program.steps.size();
    running = n;
  }

  // Makes the current fiber wait its turn at its (new) clock.
  void yield_at(Core& c) {
    c.props->key = c.clock;
    boost::this_fiber::yield();
  }

  void fail(const std::string& why) {
    if (failed) return;
    failed = true;
    failure = why;
    for (Core& c : cores)
      if (c.waiting) wake(c, c.clock);
  }

  // Makes a waiting core ready at simulated time `at`. It stops counting as
  // blocked now, not when it next runs, so the deadlock check stays exact.
  void wake(Core& c, double at) {
    c.waiting = false;
    --blocked;
    c.props->key = std::max(c.clock, at);
    c.cv.notify_all();
  }

  // Called when a core blocks or finishes: if every running core is waiting,
  // nothing can ever wake them. Returns true when it found that so.
  bool check_deadlock() {
    if (failed || running == 0 || blocked < running) return false;
    std::string who;
    int listed = 0;
    for (size_t r = 0; r < cores.size() && listed < 8; ++r) {
      if (!cores[r].waiting) continue;
      const size_t step = cores[r].step;
      who += detail::str_cat(listed ? "; " : " ", "core ", r, " waits for core ",
                             cores[r].wait_peer, " in ",
                             step < program.steps.size() ? program.steps[step].op->name()
                                                         : std::string("a direct call"));
      ++listed;
    }
    fail(
        "simulation deadlock: every running core waits for a message nobody will send "
        "(the cores called different collectives or sizes):" +
        who);
    return true;
  }
};

std::string json_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    r += ch;
  }
  return r;
}

class SimTransport : public Transport {
 public:
  SimTransport(World& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(w_.cores.size()); }
  bool carries_data() const override { return w_.carries_data; }
  // Whole chunks: a link's cost already models a pipelined transfer.
  size_t ring_segment_bytes() const override { return 0; }
  bool flat_network() const override { return kSimulatorFlatNetwork; }

  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    check_peer(peer, "send");
    if (w_.failed) throw PeerLostError("simulation stopped: " + w_.failure);
    World::Core& me = w_.cores[rank_];
    const Route& route = w_.route(rank_, peer);
    double start = me.clock;
    for (int l : route.links) start = std::max(start, w_.link_free[l]);
    const double serialize = route.bandwidth > 0 ? static_cast<double>(bytes) / route.bandwidth : 0;
    static const std::string kOutside = "message";
    const std::string* label = nullptr;
    if (w_.tracing)
      label = me.step < w_.program.steps.size() ? &w_.program.steps[me.step].op->name() : &kOutside;
    std::string args;
    if (label && bytes)
      args = detail::str_cat("\"op\":\"", json_escape(*label), "\",\"bytes\":", bytes,
                             ",\"from_core\":", rank_, ",\"to_core\":", peer);
    for (int l : route.links) {
      w_.link_free[l] = start + serialize;
      w_.link_bytes[l] += static_cast<int64_t>(bytes);
      if (label && bytes) w_.events.push_back({1, l, *label, start, start + serialize, args});
    }
    Message m;
    m.arrival = start + route.latency + serialize;
    m.bytes = bytes;
    if (w_.carries_data && bytes) {
      m.data.resize(bytes);
      std::memcpy(m.data.data(), data, bytes);
    }
    me.bytes_sent += static_cast<int64_t>(bytes);
    w_.step_bytes[me.step] += static_cast<int64_t>(bytes);
    ++w_.messages;
    if (label && bytes) w_.flows.push_back({rank_, peer, me.clock, m.arrival});
    World::Core& to = w_.cores[peer];
    const double arrival = m.arrival;
    to.inbox[{rank_, tag}].push_back(std::move(m));
    if (to.waiting && to.wait_peer == rank_ && to.wait_tag == tag) w_.wake(to, arrival);
  }

  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    check_peer(peer, "recv");
    World::Core& me = w_.cores[rank_];
    const InboxKey key{peer, tag};
    std::deque<Message>& q = me.inbox[key];  // nodes are stable while senders add others
    {
      std::unique_lock<boost::fibers::mutex> lock(me.mu);
      while (q.empty()) {
        if (w_.failed) throw PeerLostError("simulation stopped: " + w_.failure);
        me.waiting = true;
        me.wait_peer = peer;
        me.wait_tag = tag;
        ++w_.blocked;
        if (w_.check_deadlock()) throw TimeoutError(w_.failure);  // fail() woke us all
        if (!w_.failed) me.cv.wait(lock);
        if (me.waiting) {  // woken by something else than wake()
          --w_.blocked;
          me.waiting = false;
        }
      }
    }
    Message m = std::move(q.front());
    q.pop_front();
    if (q.empty()) me.inbox.erase(key);
    if (m.bytes != bytes) {
      w_.fail(detail::str_cat("core ", rank_, " expected ", bytes, " bytes from core ", peer,
                              " but got ", m.bytes));
      throw ValueError(detail::str_cat("recv: core ", rank_, " expected ", bytes,
                                       " bytes from core ", peer, " (tag ", tag, ") but core ",
                                       peer, " sent ", m.bytes,
                                       "; the cores called different collectives or sizes"));
    }
    if (w_.carries_data && bytes) std::memcpy(data, m.data.data(), bytes);
    if (m.arrival > me.clock) {
      me.clock = m.arrival;
      w_.yield_at(me);
    }
  }

 private:
  World& w_;
  int rank_;
};

class CoreHooks : public StepHooks {
 public:
  CoreHooks(World& w, int rank, bool dry) : w_(w), rank_(rank), dry_(dry) {}
  void before_step(const Step&, size_t index) override {
    World::Core& c = w_.cores[rank_];
    c.step = index;
    start_ = c.clock;
    sent_before_ = c.bytes_sent;
  }
  void after_step(const Step& s, size_t index) override {
    World::Core& c = w_.cores[rank_];
    if (s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit) {
      const double dt = w_.compute_time[index];
      c.clock += dt;
      c.compute += dt;
    } else {
      c.communication += c.clock - start_;
    }
    w_.step_time_sum[index] += c.clock - start_;
    if (w_.tracing && c.clock > start_) {
      const bool compute = s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit;
      std::string name = s.op->name();
      if (!compute) name += std::string(" ") + step_kind_name(s.kind);
      std::string args = detail::str_cat("\"op\":\"", json_escape(s.op->name()), "\",\"kind\":\"",
                                         step_kind_name(s.kind), "\"");
      if (compute) args += detail::str_cat(",\"flops\":", s.flops);
      if (c.bytes_sent > sent_before_)
        args += detail::str_cat(",\"bytes_sent\":", c.bytes_sent - sent_before_);
      w_.events.push_back({0, rank_, name, start_, c.clock, args});
    }
    if (c.clock > start_) w_.yield_at(c);
  }
  bool dry() const override { return dry_; }

 private:
  World& w_;
  int rank_;
  bool dry_;
  double start_ = 0;
  int64_t sent_before_ = 0;
};

void write_trace(const std::string& path, const World& w, const Machine& machine) {
  std::ofstream out(path);
  if (!out) throw IoError("cannot write the trace file \"" + path + "\"");
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"cores"}},)"
      << "\n";
  out << R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"links"}})";
  for (size_t r = 0; r < w.cores.size(); ++r) {
    const int phys = w.mapping.physical[r];
    std::vector<int> xs = machine.chip_coords(phys);
    std::string chip;
    for (size_t d = 0; d < xs.size(); ++d) chip += (d ? "," : "") + std::to_string(xs[d]);
    out << ",\n"
        << R"({"name":"thread_name","ph":"M","pid":0,"tid":)" << r << R"(,"args":{"name":"core )"
        << r << " (chip " << chip << " core " << machine.core_index(phys) << ")\"}}";
  }
  std::vector<bool> named(machine.num_links(), false);
  for (const TraceEvent& e : w.events) {
    if (e.pid == 1 && !named[e.tid]) {
      named[e.tid] = true;
      out << ",\n"
          << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << e.tid << R"(,"args":{"name":")"
          << json_escape(machine.link_name(e.tid)) << "\"}}";
    }
  }
  out.precision(15);
  for (const TraceEvent& e : w.events) {
    out << ",\n"
        << R"({"name":")" << json_escape(e.name) << R"(","ph":"X","pid":)" << e.pid
        << ",\"tid\":" << e.tid << ",\"ts\":" << e.start * 1e6
        << ",\"dur\":" << (e.end - e.start) * 1e6;
    if (!e.args.empty()) out << ",\"args\":{" << e.args << "}";
    out << "}";
  }
  // Flow arrows: each message from the step that sent it to the step that
  // received it (bound to the slices around those instants).
  for (size_t k = 0; k < w.flows.size(); ++k) {
    const TraceFlow& f = w.flows[k];
    out << ",\n"
        << R"({"name":"message","cat":"message","ph":"s","id":)" << k
        << ",\"pid\":0,\"tid\":" << f.from << ",\"ts\":" << f.sent * 1e6 << "},\n"
        << R"({"name":"message","cat":"message","ph":"f","bp":"e","id":)" << k
        << ",\"pid\":0,\"tid\":" << f.to << ",\"ts\":" << f.arrived * 1e6 << "}";
  }
  out << "\n]}\n";
  out.flush();
  if (!out) throw IoError("writing the trace file \"" + path + "\" failed");
}

}  // namespace

double step_compute_time(const Program& program, const Step& step, const Topology& topo) {
  double bytes = 0;
  if (step.kind == Step::Kind::kCompute && step.op->type() == "variable") return 0;
  for (size_t i = 0; i < step.input_slots.size(); ++i) {
    // Inputs an op takes for the graph's sake only (recompute_grad's) are not read.
    if (step.kind == Step::Kind::kCompute && !step.op->reads_input(static_cast<int>(i))) continue;
    bytes += static_cast<double>(program.slot_bytes(step.input_slots[i]));
  }
  for (int s : step.output_slots) bytes += static_cast<double>(program.slot_bytes(s));
  return std::max(step.flops / topo.core_flops, bytes / topo.core_memory_bandwidth());
}

Engine::Engine(const SimOptions& options, const MeshShape& mesh)
    : options_(options),
      mesh_(mesh),
      machine_(options.topology),
      mapping_(options.physical_order.empty()
                   ? CoreMapping::automatic(mesh, options.topology)
                   : CoreMapping::explicit_order(mesh, options.topology, options.physical_order)) {}

SimReport Engine::run(const Program& program,
                      const std::function<void(Transport&, StepHooks&)>& core_main) {
  const int n = static_cast<int>(mesh_.size());
  const bool dry = options_.mode == SimMode::kCostOnly;
  World w(program, machine_, mapping_, !dry, !options_.trace_path.empty());
  w.init(n);
  transport::FirstError errors;
  // A thread of its own, so the time-ordered scheduler governs only these
  // fibers.
  std::thread runner([&] {
    boost::fibers::use_scheduling_algorithm<TimeOrderedScheduler>();
    std::vector<boost::fibers::fiber> fibers;
    fibers.reserve(n);
    for (int r = 0; r < n; ++r) {
      fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(kFiberStackBytes),
                          [&, r] {
                            World::Core& c = w.cores[r];
                            c.props = &boost::this_fiber::properties<SimProps>();
                            c.props->order = r;
                            w.yield_at(c);
                            SimTransport t(w, r);
                            CoreHooks hooks(w, r, dry);
                            try {
                              core_main(t, hooks);
                            } catch (...) {
                              errors.record(std::current_exception());
                              w.fail(detail::str_cat("core ", r, " failed"));
                            }
                            --w.running;
                            if (w.check_deadlock())
                              errors.record(std::make_exception_ptr(TimeoutError(w.failure)));
                          });
    }
    for (auto& f : fibers) f.join();
  });
  runner.join();
  errors.rethrow_if_any();

  SimReport rep;
  rep.topology = options_.topology.name;
  rep.mesh = mesh_.to_string();
  rep.mode = dry ? "cost-only" : "functional";
  rep.cores = n;
  for (const auto& c : w.cores) rep.step_time = std::max(rep.step_time, c.clock);
  for (const auto& c : w.cores) {
    SimReport::Core rc;
    rc.compute = c.compute;
    rc.communication = c.communication;
    rc.idle = std::max(0.0, rep.step_time - c.compute - c.communication);
    rc.bytes_sent = c.bytes_sent;
    rep.per_core.push_back(rc);
  }
  rep.flops_per_core = program.total_flops();
  rep.utilization =
      rep.step_time > 0 ? rep.flops_per_core / (rep.step_time * options_.topology.core_flops) : 0;
  rep.messages = w.messages;
  // Real links: no self links between a core and itself, no dimension of
  // extent one.
  int64_t total_bytes = 0;
  const Topology& topo = options_.topology;
  const int dims = static_cast<int>(topo.chips.size());
  for (int l = 0; l < machine_.num_links(); ++l) {
    bool real;
    if (machine_.on_chip(l)) {
      const int i = l - topo.num_chips() * 2 * dims, c = topo.cores_per_chip;
      real = (i / c) % c != i % c;
    } else {
      real = topo.chips[(l / 2) % dims] > 1;
    }
    if (!real) continue;
    ++rep.links_total;
    if (w.link_bytes[l] > 0) ++rep.links_used;
    rep.link_bytes_max = std::max(rep.link_bytes_max, w.link_bytes[l]);
    total_bytes += w.link_bytes[l];
  }
  rep.link_bytes_mean = rep.links_total ? static_cast<double>(total_bytes) / rep.links_total : 0.0;
  std::map<std::string, size_t> row_of;
  std::map<std::string, int64_t> by_kind;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (w.step_bytes[i] > 0) by_kind[step_kind_name(s.kind)] += w.step_bytes[i] / n;
    auto [it, fresh] = row_of.emplace(s.op->name(), rep.ops.size());
    if (fresh) rep.ops.push_back({s.op->name(), 0, 0, 0});
    SimReport::OpRow& row = rep.ops[it->second];
    if (s.kind == Step::Kind::kCompute) row.flops += s.flops;
    row.bytes += w.step_bytes[i] / n;
    row.time += w.step_time_sum[i] / n;
  }
  rep.sent_by_kind.assign(by_kind.begin(), by_kind.end());
  rep.rings = mapping_.rings;
  if (!options_.trace_path.empty()) write_trace(options_.trace_path, w, machine_);
  return rep;
}

}  // namespace mtf::sim
