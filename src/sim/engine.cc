// The simulation engine: simulated cores as fibers, a transport that times
// messages over the machine's links, and the report.
#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/check.h"
#include "kernels/conv.h"
#include "kernels/kernels.h"
#include "kernels/thread_count.h"
#include "mtf/errors.h"
#include "ops/op_util.h"
#include "sim/scheduler.h"
#include "sim/world.h"
#include "transport/first_error.h"

namespace mtf::sim {
namespace {

constexpr size_t kFiberStackBytes = 256 * 1024;
// Runs of a step with out-of-order rings taken out, before every ring goes
// message by message.
constexpr int kRingTimingAttempts = 8;

// A core's transport: messages timed over the machine's links, rings timed
// at once by World::rings (their data, in functional mode, then moves in
// untimed messages).
class SimTransport : public Transport {
 public:
  SimTransport(World& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(w_.cores().size()); }
  bool carries_data() const override { return w_.carries_data(); }
  // Whole chunks: a link's cost already models a pipelined transfer.
  size_t ring_segment_bytes() const override { return 0; }
  bool flat_network() const override { return w_.machine().topology().flat(); }
  // The node of every processor on a machine of several nodes, so that
  // allreduces spanning nodes go hierarchical as on a real cluster.
  std::vector<int> machines() const override { return w_.machine_of_rank(); }

  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    check_peer(peer, "send");
    if (w_.failed()) throw PeerLostError("simulation stopped: " + w_.failure());
    World::Core& me = w_.core(rank_);
    w_.take_turn(me);
    Message m;
    auto timed = timed_sends_.find(tag);
    if (timed == timed_sends_.end()) {
      m.arrival = w_.transmit(w_.route(rank_, peer), rank_, peer, bytes, me.clock, 0);
    } else if (--timed->second == 0) {  // a ring's data, timed already: no time
      timed_sends_.erase(timed);
    }
    m.bytes = bytes;
    if (w_.carries_data() && bytes) {
      m.data.resize(bytes);
      std::memcpy(m.data.data(), data, bytes);
    }
    World::Core& to = w_.core(peer);
    const double arrival = m.arrival;
    to.inbox[{rank_, tag}].push_back(std::move(m));
    if (to.waiting && to.wait_peer == rank_ && to.wait_tag == tag) w_.wake(to, arrival);
  }

  bool time_ring_passes(const std::vector<RingPassTiming>& passes) override {
    w_.take_turn(w_.core(rank_));
    if (!w_.rings().time(w_, rank_, passes)) return false;
    if (w_.carries_data())
      for (const RingPassTiming& p : passes)
        timed_sends_[p.tag] += static_cast<int64_t>(p.order->size()) - 1;
    return true;
  }

  bool time_exchange_rounds(const ExchangeRoundsTiming& timing) override {
    w_.take_turn(w_.core(rank_));
    if (!w_.rings().time_rounds(w_, rank_, timing)) return false;
    if (w_.carries_data())
      for (const ExchangeRound& r : timing.rounds)
        if (r.send_to >= 0) ++timed_sends_[timing.tag];
    return true;
  }

  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    check_peer(peer, "recv");
    World::Core& me = w_.core(rank_);
    const InboxKey key{peer, tag};
    std::deque<Message>& q = me.inbox[key];  // nodes are stable while senders add others
    {
      std::unique_lock<boost::fibers::mutex> lock(me.mu);
      while (q.empty()) w_.block(me, lock, peer, tag);
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
    if (w_.carries_data() && bytes) std::memcpy(data, m.data.data(), bytes);
    if (m.arrival > me.clock) {
      me.clock = m.arrival;
      me.behind = true;
    }
  }

 private:
  World& w_;
  int rank_;
  // Per tag: sends of rings already timed, still to move their data.
  std::unordered_map<uint64_t, int64_t> timed_sends_;
};

class CoreHooks : public StepHooks {
 public:
  CoreHooks(World& w, int rank, bool dry) : w_(w), rank_(rank), dry_(dry) {}
  void before_step(const Step&, size_t index) override {
    World::Core& c = w_.core(rank_);
    c.step = index;
    start_ = c.clock;
    sent_before_ = c.bytes_sent;
    c.clock += w_.wait_before(index);
  }
  void after_step(const Step& s, size_t index) override {
    World::Core& c = w_.core(rank_);
    if (s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit) {
      const double dt = w_.compute_time(index);
      c.clock += dt;
      c.compute += dt;
    } else {
      // A halo step's copies, after its messages (0 for other collectives).
      c.clock += w_.compute_time(index);
      c.communication += c.clock - start_;
    }
    w_.tally().step_time_sum[index] += c.clock - start_;
    if (w_.tracing() && c.clock > start_) {
      const bool compute = s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit;
      std::string name = s.op->name();
      if (!compute) name += std::string(" ") + step_kind_name(s.kind);
      std::string args = detail::str_cat("\"op\":\"", json_escape(s.op->name()), "\",\"kind\":\"",
                                         step_kind_name(s.kind), "\"");
      if (compute) args += detail::str_cat(",\"flops\":", s.flops);
      if (c.bytes_sent > sent_before_)
        args += detail::str_cat(",\"bytes_sent\":", c.bytes_sent - sent_before_);
      w_.tally().events.push_back({0, rank_, name, start_, c.clock, args});
    }
    if (c.clock > start_) c.behind = true;
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
  for (size_t r = 0; r < w.cores().size(); ++r) {
    out << ",\n"
        << R"({"name":"thread_name","ph":"M","pid":0,"tid":)" << r << R"(,"args":{"name":"core )"
        << r << " (" << machine.core_label(w.mapping().physical[r]) << ")\"}}";
  }
  std::vector<bool> named(machine.num_links(), false);
  for (const TraceEvent& e : w.tally().events) {
    if (e.pid == 1 && !named[e.tid]) {
      named[e.tid] = true;
      out << ",\n"
          << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << e.tid << R"(,"args":{"name":")"
          << json_escape(machine.link_name(e.tid)) << "\"}}";
    }
  }
  out.precision(15);
  for (const TraceEvent& e : w.tally().events) {
    out << ",\n"
        << R"({"name":")" << json_escape(e.name) << R"(","ph":"X","pid":)" << e.pid
        << ",\"tid\":" << e.tid << ",\"ts\":" << e.start * 1e6
        << ",\"dur\":" << (e.end - e.start) * 1e6;
    if (!e.args.empty()) out << ",\"args\":{" << e.args << "}";
    out << "}";
  }
  // Flow arrows: each message from the step that sent it to the step that
  // received it (bound to the slices around those instants).
  for (size_t k = 0; k < w.tally().flows.size(); ++k) {
    const TraceFlow& f = w.tally().flows[k];
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

// Runs core_main on every core of `w` as fibers under the time-ordered
// scheduler; rethrows the first core's error.
void run_cores(World& w, bool dry, const std::function<void(Transport&, StepHooks&)>& core_main) {
  const int n = static_cast<int>(w.cores().size());
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
                            World::Core& c = w.core(r);
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
                            w.finish(c);
                            if (w.check_deadlock())
                              errors.record(std::make_exception_ptr(TimeoutError(w.failure())));
                          });
    }
    for (auto& f : fibers) f.join();
  });
  runner.join();
  errors.rethrow_if_any();
}

}  // namespace

namespace {

// The threads a step's kernel shares its work among (Step::threaded: a
// step of bfloat16, or of a program without float32 products on OpenBLAS):
// fused chains, row kernels and reductions split over the rank's threads
// as far as their largest operand repays it (kernels::threads_for); other
// steps run on one.
int kernel_split(const Program& program, const Step& step, bool fused, const Topology& topo) {
  const bool reduction = step.op && step.op->type().rfind("reduce_", 0) == 0;
  if (!step.threaded || !(fused || reduction)) return 1;
  int64_t elements = 0;
  for (const auto* slots : {&step.input_slots, &step.output_slots})
    for (int slot : *slots)
      elements =
          std::max(elements, program.slot_bytes(slot) /
                                 static_cast<int64_t>(dtype_size(program.slot_dtypes[slot])));
  return kernels::threads_for(elements, topo.host_rank_threads());
}

bool transcendental(const std::string& type) {
  static const std::set<std::string> kTypes = {"exp",      "log",       "tanh", "sigmoid", "gelu",
                                               "softplus", "gelu_grad", "sin",  "cos",     "pow"};
  return kTypes.count(type) > 0;
}

// The BLAS calls of a convolution step (kernels/conv.cc): the filter [taps
// x Cx, Cy] against rows of im2col columns (one per output position),
// chunked so that a chunk's columns stay in cache, each chunk one product
// on one BLAS thread;
// and the bytes of the columns, written and read back. The filter is
// input 1 of conv and conv_input_grad and the output of conv_filter_grad.
struct ConvCalls {
  kernels::GemmCall gemm;
  double column_bytes = 0;
};
ConvCalls conv_calls(const Operation& op, double flops) {
  const Shape& filter =
      op.type() == "conv_filter_grad" ? op.output(0).shape() : op.inputs()[1].shape();
  const double cy = static_cast<double>(filter.dims().back().size);
  const double kc = static_cast<double>(filter.num_elements()) / cy;
  const double rows = std::max(1.0, flops / (2 * kc * cy));
  const auto k = static_cast<int64_t>(kc), y = static_cast<int64_t>(cy);
  const int64_t ch = kernels::conv_chunk_rows(k, static_cast<int64_t>(rows));
  ConvCalls c;
  c.gemm.batch = static_cast<int64_t>(std::ceil(rows / static_cast<double>(ch)));
  if (op.type() == "conv")
    c.gemm = {c.gemm.batch, ch, y, k};
  else if (op.type() == "conv_input_grad")
    c.gemm = {c.gemm.batch, ch, k, y};
  else
    c.gemm = {c.gemm.batch, k, y, ch};
  c.column_bytes = 2 * rows * kc * 4;
  return c;
}

// A compute step on a host: the BLAS calls of its kernel plan (or of a
// convolution, with its columns' traffic), or the roofline of its
// elementwise work, in the step's dtype.
double host_step_time(const Program& program, const Step& step, double bytes, DType dtype,
                      const Topology& topo) {
  const Operation* product = step.update.einsum ? step.update.einsum : step.op;
  const bool einsum = step.kind == Step::Kind::kCompute && product->type() == "einsum";
  const bool conv = step.kind == Step::Kind::kCompute && product->type().rfind("conv", 0) == 0;
  if (einsum && step.flops > 0 && step.kernel_plan) {
    const std::vector<kernels::GemmCall> calls = kernels::einsum_gemm_calls(*step.kernel_plan);
    if (!calls.empty()) {
      // The calls, and their flops with the step's operands read cold
      // once (calls of a batch share an operand); a call bound by its
      // bytes streams them already.
      double bound = 0, by_flops = 0;
      for (const kernels::GemmCall& c : calls) {
        double flops_only = 0;
        bound += static_cast<double>(c.batch) *
                 topo.host_gemm_seconds(static_cast<double>(c.m), static_cast<double>(c.n),
                                        static_cast<double>(c.k), dtype, false, true, &flops_only);
        by_flops += static_cast<double>(c.batch) * flops_only;
      }
      return topo.host_step_seconds(
          std::max(bound, by_flops + topo.host_cold_operand_seconds(bytes)));
    }
  }
  // A convolution: its calls and columns on the bare curve and roofline,
  // times conv_in_program, which calibration measures against those (with
  // gemm_in_program and the elementwise factor as well, a CNN's
  // convolutions were counted 1.2-1.4x over).
  if (conv && step.flops > 0) {
    const ConvCalls c = conv_calls(*product, step.flops);
    const double work =
        static_cast<double>(c.gemm.batch) *
            topo.host_gemm_seconds(static_cast<double>(c.gemm.m), static_cast<double>(c.gemm.n),
                                   static_cast<double>(c.gemm.k), dtype, /*one_thread=*/true,
                                   /*in_program_factor=*/false) +
        topo.host_roofline_seconds(0, c.column_bytes);
    return topo.host_step_seconds(work * topo.host_conv_factor());
  }
  // Pooling and its gradients: their roofline times their own factors (the
  // gradient's window search and adds to scattered taps ran at a third of a
  // stream's rate).
  const PoolingStep pool =
      step.kind == Step::Kind::kCompute ? pooling_step(product->type()) : PoolingStep::kNone;
  if (pool != PoolingStep::kNone) {
    return topo.host_step_seconds(topo.host_paced_seconds(
        step.flops, bytes, topo.host_pool_factor(pool == PoolingStep::kGradient)));
  }
  // No plan: one square product. A plan without BLAS calls (a product
  // broadcast elementwise: a gradient's dy * mask) falls through to the
  // elementwise time of its bytes (as one square product it read 0.03 ms
  // where the encoder-decoder's took 0.72).
  const bool elementwise_product =
      einsum && step.kernel_plan && kernels::einsum_without_gemm(*step.kernel_plan);
  if (einsum && step.flops > 0 && !elementwise_product) {
    const double side = std::cbrt(step.flops / 2);
    return topo.host_step_seconds(topo.host_gemm_seconds(side, side, side, dtype));
  }
  // Elementwise work, exp and the like, and random draws, weighted by their
  // cost.
  double flops = step.flops;
  // One kernel over several ops: a fused chain, or a composition's row
  // kernel (lowering/row_kernels.h), timed as the ops it runs.
  ops::RowKernel rows;
  const bool row_kernel = step.kind == Step::Kind::kCompute && ops::as_row_kernel(*step.op, &rows);
  const std::vector<const Operation*> single{step.op};
  const auto& ops = step.fusion.expr ? step.fusion.ops : row_kernel ? rows.composition : single;
  // Random draws take the time calibration measured for them, outside the
  // in-program factor fitted on bandwidth-bound steps (that factor, 0.5 on
  // an Emerald Rapids VM, halved the draws: dropout's took 2.2-2.5 ms a
  // million where 1.0 was predicted).
  double plain = 0, weighted = 0, draws = 0;
  for (const Operation* op : ops) {
    const double f = op->flops();
    plain += f;
    if (op->type().rfind("random_", 0) == 0)
      draws += f;
    else
      weighted += transcendental(op->type()) ? f * topo.host.transcendental_cost : f;
  }
  if (plain > 0) flops *= weighted / plain;
  const double draw_seconds =
      plain > 0 ? step.flops * draws / plain * topo.host.random_cost / topo.core_flops : 0;
  const bool fused = step.fusion.expr != nullptr || row_kernel;
  return topo.host_step_seconds(
      topo.host_elementwise_seconds(flops, bytes, fused, kernel_split(program, step, fused, topo)) +
      draw_seconds);
}

}  // namespace

double halo_copy_time(const Program& program, const Step& step, const Topology& topo) {
  // halo_exchange zeroes the windowed slice, copies the rank's own rows and
  // the rows received into it, and packs the rows it sends: the input read
  // once, the output written twice. On the presets' accelerators the copies
  // are whatever their compiler makes of the exchange (fused into the
  // convolution's reads or not), which nothing here measures: 0 there.
  if (topo.host_cpus <= 0) return 0;
  const double bytes = static_cast<double>(program.slot_bytes(step.input_slots.at(0))) +
                       2 * static_cast<double>(program.slot_bytes(step.output_slots.at(0)));
  return topo.host_step_seconds(topo.host_elementwise_seconds(0, bytes, /*fused=*/false));
}

double step_compute_time(const Program& program, const Step& step, const Topology& topo) {
  double bytes = 0;
  if (step.kind == Step::Kind::kCompute && step.op->type() == "variable") return 0;
  for (size_t i = 0; i < step.input_slots.size(); ++i) {
    // Inputs an op takes for the graph's sake only (recompute_grad's) are not read.
    if (step.kind == Step::Kind::kCompute && !step.op->reads_input(static_cast<int>(i))) continue;
    bytes += static_cast<double>(program.slot_bytes(step.input_slots[i]));
  }
  for (int s : step.output_slots) bytes += static_cast<double>(program.slot_bytes(s));
  // The op's arithmetic runs in the dtype of its inputs (a cast's: its output's).
  DType dtype = DType::kFloat32;
  if (!step.input_slots.empty()) {
    dtype = program.slot_dtypes[step.input_slots[0]];
  } else if (!step.output_slots.empty()) {
    dtype = program.slot_dtypes[step.output_slots[0]];
  }
  if (topo.host_cpus > 0) return host_step_time(program, step, bytes, dtype, topo);
  return std::max(step.flops / topo.flops(dtype), bytes / topo.core_memory_bandwidth());
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
  std::unique_ptr<World> world;
  for (int attempt = 0;; ++attempt) {
    world = std::make_unique<World>(program, machine_, mapping_, !dry, !options_.trace_path.empty(),
                                    &slow_rings_);
    if (attempt == kRingTimingAttempts || !options_.ring_timing) world->rings().disable();
    world->init(n);
    run_cores(*world, dry, core_main);
    // Rings timed at once while other traffic shared their links out of
    // time order: again, with those rings message by message.
    const std::set<RingKey>& late = world->rings().out_of_order_rings();
    if (late.empty() || attempt == kRingTimingAttempts) break;
    slow_rings_.insert(late.begin(), late.end());
  }
  World& w = *world;

  SimReport rep;
  rep.topology = options_.topology.name;
  rep.mesh = mesh_.to_string();
  rep.mode = dry ? "cost-only" : "functional";
  rep.cores = n;
  for (const auto& c : w.cores()) rep.step_time = std::max(rep.step_time, c.clock);
  rep.step_time += options_.topology.host_run_overhead(n);
  for (const auto& c : w.cores()) {
    SimReport::Core rc;
    rc.compute = c.compute;
    rc.communication = c.communication;
    rc.idle = std::max(0.0, rep.step_time - c.compute - c.communication);
    rc.bytes_sent = c.bytes_sent;
    rep.per_core.push_back(rc);
  }
  rep.flops_per_core = program.total_flops();
  // A host's peak is its matrix products' (a large one, with the BLAS
  // threads a rank gets).
  const Topology& topo = options_.topology;
  const double big = 4096;
  const double peak = topo.host_cpus > 0
                          ? 2 * big * big * big / topo.host_gemm_seconds(big, big, big)
                          : topo.core_flops;
  rep.utilization = rep.step_time > 0 ? rep.flops_per_core / (rep.step_time * peak) : 0;
  rep.messages = w.tally().messages;
  // Real links: no self links between a core and itself, no dimension of
  // extent one.
  int64_t total_bytes = 0;
  for (int l = 0; l < machine_.num_links(); ++l) {
    if (!machine_.exists(l)) continue;
    ++rep.links_total;
    if (w.links().bytes[l] > 0) ++rep.links_used;
    rep.link_bytes_max = std::max(rep.link_bytes_max, w.links().bytes[l]);
    total_bytes += w.links().bytes[l];
  }
  rep.link_bytes_mean = rep.links_total ? static_cast<double>(total_bytes) / rep.links_total : 0.0;
  std::map<std::string, size_t> row_of;
  std::map<std::string, int64_t> by_kind;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (w.tally().step_bytes[i] > 0) by_kind[step_kind_name(s.kind)] += w.tally().step_bytes[i] / n;
    auto [it, fresh] = row_of.emplace(s.op->name(), rep.ops.size());
    if (fresh) rep.ops.push_back({s.op->name(), 0, 0, 0});
    SimReport::OpRow& row = rep.ops[it->second];
    if (s.kind == Step::Kind::kCompute) row.flops += s.flops;
    row.bytes += w.tally().step_bytes[i] / n;
    row.time += w.tally().step_time_sum[i] / n;
  }
  rep.sent_by_kind.assign(by_kind.begin(), by_kind.end());
  rep.rings = mapping_.rings;
  if (!options_.trace_path.empty()) write_trace(options_.trace_path, w, machine_);
  return rep;
}

}  // namespace mtf::sim
