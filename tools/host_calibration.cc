// Measuring this machine for the simulator; see host_calibration.h.
#include "host_calibration.h"

#include <cblas.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include "calibration_median.h"
#include "calibration_timing.h"
#include "gemm_fit.h"
#include "mtf/in_process_transport.h"
#include "mtf/mtf.h"
#include "product_rates.h"
#include "rank_links.h"
#include "reference_programs.h"

namespace mtf::tools {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

// What a chain of elementwise steps applies per step.
enum class Link { kRelu, kAdd, kNegativeExp };

// A run of `k` steps on a variable of n floats written back into it (the
// fetch-free way to make the ops run): k + 1 steps, or one fused step.
// kRelu reads and writes one tensor a step; kAdd adds a second variable
// (three tensors a step); kNegativeExp is exp(-x), two ops a step.
double chain_seconds(int64_t n, int k, bool fuse, Link link = Link::kRelu) {
  Graph g;
  Mesh mesh(g, "calibration");
  const Shape shape({Dimension{"x", n}});
  Tensor v = get_variable(mesh, "v", shape);
  Tensor w = get_variable(mesh, "w", shape);
  Tensor y = v;
  for (int i = 0; i < k; ++i) {
    if (link == Link::kRelu) y = relu(y);
    if (link == Link::kAdd) y = add(y, w);
    if (link == Link::kNegativeExp) y = exp(negative(y));
  }
  Operation* write = assign(v, link == Link::kAdd ? relu(y) : y);
  MeshConfig c;
  c.fuse = fuse;
  Session s(g, c);
  return time_median([&] { s.run(std::vector<Tensor>{}, {}, {write}); });
}

// A run drawing n uniform floats into a variable: two steps.
double random_seconds(int64_t n) {
  Graph g;
  Mesh mesh(g, "calibration");
  const Shape shape({Dimension{"x", n}});
  Tensor v = get_variable(mesh, "v", shape);
  Operation* write = assign(v, random_uniform(mesh, shape));
  Session s(g, MeshConfig{});
  return time_median([&] { s.run(std::vector<Tensor>{}, {}, {write}); });
}

// A chain of `relus` unfused relus over a variable of `floats` floats,
// written back, on `ranks` replicated ranks (no messages), profiled.
class ReplicatedChain {
 public:
  ReplicatedChain(int ranks, int64_t floats, int relus) {
    Mesh mesh(graph_, "calibration");
    Tensor v = get_variable(mesh, "v", Shape({Dimension{"x", floats}}));
    Tensor y = v;
    for (int i = 0; i < relus; ++i) y = relu(y);
    write_ = assign(v, y);
    MeshConfig c;
    c.mesh_shape = MeshShape("all:" + std::to_string(ranks));
    c.fuse = false;
    c.profile = true;
    session_ = std::make_unique<Session>(graph_, c);
  }
  // The profile of `timed` runs after `untimed` ones.
  Profile profile(int untimed, int timed) {
    for (int i = 0; i < untimed; ++i) session_->run(std::vector<Tensor>{}, {}, {write_});
    session_->reset_profile();
    for (int i = 0; i < timed; ++i) session_->run(std::vector<Tensor>{}, {}, {write_});
    return session_->profile();
  }

 private:
  Graph graph_;
  Operation* write_ = nullptr;
  std::unique_ptr<Session> session_;
};

// What a run of ranks as threads costs beyond its slowest rank's steps:
// waking the pool's threads, and the caller waking when the last rank ends,
// each after sleeping through the run. Measured on runs of about 7 ms
// (replicated ranks, each a chain of 12 unfused relus over 8 MiB: no
// messages), as the profile's run time less its slowest processor's steps.
// On a 2-vCPU AMD EPYC VM that was 100-250 us, and 35 us for runs of 0.3
// ms: the longer a thread sleeps, the longer it takes to wake. A chain of
// two tiny steps back to back (the figure before) read 40-50 us.
double threads_run_overhead_seconds(int ranks) {
  ReplicatedChain chain(ranks, 1 << 21, 12);
  chain.profile(3, 0);
  std::vector<double> outside;
  for (int i = 0; i < 15; ++i) {
    const Profile p = chain.profile(0, 1);
    if (p.programs.empty()) continue;
    const ProgramProfile& run = p.programs.front();
    double slowest = run.step_seconds;
    for (const ProcessorTime& t : run.by_processor)
      slowest = std::max(slowest, t.compute_seconds + t.collective_seconds);
    outside.push_back(std::max(0.0, run.run_seconds - slowest));
  }
  return outside.empty() ? 0.0 : median(outside);
}

// Weighted least squares of y = intercept + slope * x.
struct WeightedSums {
  double w = 0, x = 0, y = 0, xx = 0, xy = 0;
  void add(double px, double py, double weight) {
    w += weight;
    x += weight * px;
    y += weight * py;
    xx += weight * px * px;
    xy += weight * px * py;
  }
  double det() const { return w * xx - x * x; }
  double intercept() const { return (xx * y - x * xy) / det(); }  // REQUIRES: det() > 0
  double slope() const { return (w * xy - x * y) / det(); }       // REQUIRES: det() > 0
};

// measured = a * simulated + b over the points: b, the cost of a step, from
// the line weighted 1/measured (small steps count as much as big ones), in
// [0, 100 us]; then a so that the steps' total time is the measured total,
// in [0.5, 5]. (a from the weighted line too followed the many small steps:
// 0.55 on an Intel Xeon where the reference programs' other steps took 2.1x
// their simulated total, and the validation's larger steps ran at 2x their
// prediction.)
void fit_line(const std::vector<std::pair<double, double>>& points, double* a, double* b) {
  WeightedSums sums;
  double total_x = 0, total_y = 0, n = 0;
  for (const auto& [x, y] : points) {
    if (!(y > 0)) continue;
    sums.add(x, y, 1 / y);
    total_x += x;
    total_y += y;
    ++n;
  }
  double slope = sums.det() > 0 ? sums.slope() : (sums.x > 0 ? sums.y / sums.x : 1);
  slope = std::clamp(slope, 0.5, 5.0);
  *b = sums.w > 0 ? std::clamp((sums.y - slope * sums.x) / sums.w, 0.0, 1e-4) : 0;
  *a = total_x > 0 ? std::clamp((total_y - n * *b) / total_x, 0.5, 5.0) : slope;
}

}  // namespace

std::string Calibration::report() const {
  std::ostringstream o;
  char buf[256];
  for (const CalibrationPoint& p : points) {
    std::snprintf(buf, sizeof(buf), "  %-44s %10.1f us", p.what.c_str(), p.seconds * 1e6);
    o << buf;
    if (p.rate > 0) {
      std::snprintf(buf, sizeof(buf), "  %8.2f G/s", p.rate / 1e9);
      o << buf;
    }
    if (p.model > 0) {
      std::snprintf(buf, sizeof(buf), "  (fit: %.1f us, %+.0f%%)", p.model * 1e6,
                    100 * (p.model / p.seconds - 1));
      o << buf;
    }
    o << "\n";
  }
  o << steadiness << machine.to_string() << "\n";
  return o.str();
}

namespace {

// What every stage of one calibration shares.
struct CalibrationRun {
  bool progress = false;
  int cpus = 1;          // usable CPUs
  int cpu = 0;           // the CPU single-thread figures are measured on
  int blas_threads = 1;  // OpenBLAS's threads as the process started
  void say(const char* what) const {
    if (progress) std::fprintf(stderr, "calibrating: %s\n", what);
  }
};

// Per step and per run: a chain of 33 steps against one of 1.
void measure_overheads(Calibration& cal) {
  Topology& m = cal.machine;
  const double one = chain_seconds(16, 1, false), many = chain_seconds(16, 33, false);
  m.host.step_overhead = std::max(0.0, (many - one) / 32);
  m.host.run_overhead = std::max(0.0, one - 2 * m.host.step_overhead);
  cal.points.push_back({"run of 2 steps on 16 floats", one, 0, 0});
  cal.points.push_back({"run of 34 steps on 16 floats", many, 0, 0});
}

// Bandwidth by a step's bytes (two tensors in, one out): within cache up to
// the largest size that keeps most of the smallest's, memory at the
// largest; then the flop rate of fused arithmetic and what an exp costs.
void measure_elementwise(Calibration& cal) {
  Topology& m = cal.machine;
  std::vector<std::pair<double, double>> by_size;  // bytes per step, bytes/s
  for (int64_t floats = int64_t{1} << 12; floats <= int64_t{1} << 22; floats <<= 2) {
    const double a = chain_seconds(floats, 1, false, Link::kAdd);
    const double b = chain_seconds(floats, 9, false, Link::kAdd);
    const double step = std::max(1e-9, (b - a) / 8 - m.host.step_overhead);
    by_size.push_back({12.0 * floats, 12.0 * floats / step});
    cal.points.push_back(
        {cat("add of 2 x ", 4 * floats / 1024, " KiB, per step"), step, 12.0 * floats / step, 0});
  }
  m.chip_memory_bandwidth = by_size.back().second;
  m.host.cache_bandwidth = by_size.front().second;
  m.host.cache_bytes = by_size.front().first;
  for (const auto& [bytes, bw] : by_size) {
    if (bw < 0.6 * by_size.front().second) break;
    m.host.cache_bytes = bytes;
    m.host.cache_bandwidth = std::min(m.host.cache_bandwidth, bw);
  }
  constexpr int64_t kFloats = 1 << 16;  // 256 KiB: in cache
  const double in_cache = 8.0 * kFloats / m.host.cache_bandwidth;
  const double fused = chain_seconds(kFloats, 64, true);
  const double fused_work =
      std::max(1e-9, fused - m.host.run_overhead - 2 * m.host.step_overhead - in_cache);
  // One fused kernel of 64 relus per element: its arithmetic, not its traffic.
  m.core_flops = std::max(64.0 * kFloats / fused_work, 1e8);
  cal.points.push_back({"64 relus fused on 256 KiB", fused, m.core_flops, 0});
  const double exps = chain_seconds(kFloats, 16, true, Link::kNegativeExp);
  const double exps_work =
      std::max(1e-9, exps - m.host.run_overhead - 2 * m.host.step_overhead - in_cache);
  m.host.transcendental_cost =
      std::max(1.0, (exps_work * m.core_flops - 16.0 * kFloats) / (16.0 * kFloats));
  cal.points.push_back({"16 exp(-x) fused on 256 KiB", exps, 32.0 * kFloats / exps_work, 0});
  const double draws = random_seconds(kFloats);
  const double draws_work =
      std::max(1e-9, draws - m.host.run_overhead - 2 * m.host.step_overhead - in_cache);
  m.host.random_cost = std::max(1.0, draws_work * m.core_flops / kFloats);
  cal.points.push_back({"random_uniform of 256 KiB", draws, kFloats / draws_work, 0});
}

// One curve of matrix products on `threads` BLAS threads: products timed
// through mtf, less the run's other costs. With several threads, only
// products large enough for OpenBLAS to share out.
void measure_gemm(Calibration& cal, int threads) {
  Topology& m = cal.machine;
  auto copy_seconds = [&](double bytes) {
    return bytes / (bytes <= m.host.cache_bytes ? m.host.cache_bandwidth : m.chip_memory_bandwidth);
  };
  openblas_set_num_threads(threads);
  const std::vector<ProductShape> used = calibration_shapes(m, threads);
  std::vector<double> secs;
  for (const ProductShape& s : used) {
    const double t = einsum_seconds(s.m, s.k, s.n) - m.host.run_overhead -
                     2 * m.host.step_overhead - copy_seconds(8.0 * s.m * s.n);
    secs.push_back(std::max(t, 1e-9));
  }
  measure_bfloat16_gemm(cal, threads);
  // The bytes bound first: the curve is fitted with it, as the simulator
  // applies it.
  measure_product_bandwidth(cal, threads);
  const GemmCurve curve = fit_gemm_curve(m, threads, used, secs);
  HostCompute& c = threads == 1 ? m.host.one_cpu : m.host.all_cpus;
  c.gemm_flops = curve.peak;
  c.gemm_half_flops = curve.half;
  c.gemm_narrow = curve.narrow;
  const Topology one_rank = one_rank_on(m, threads);
  for (size_t i = 0; i < used.size(); ++i) {
    const ProductShape& s = used[i];
    const double model = curve_seconds(one_rank, s);
    cal.points.push_back({cat("einsum ", s.m, "x", s.k, "x", s.n, ", ", threads,
                              threads == 1 ? " thread" : " threads"),
                          secs[i], s.flops() / secs[i], model});
  }
}

// Reference programs: what their steps take over what the figures so far
// give for them, on `threads` BLAS threads (pinned to one CPU for one).
void measure_in_program(Calibration& cal, const CalibrationRun& run, int threads) {
  Topology& m = cal.machine;
  openblas_set_num_threads(threads);
  Topology one_core = m;
  one_core.name = "host";
  one_core.network = Topology::Network::kSwitched;
  one_core.nodes = 1;
  one_core.devices_per_node = 1;
  one_core.host_cpus = threads;
  one_core.host.one_cpu.gemm_in_program = one_core.host.all_cpus.gemm_in_program = 1;
  one_core.host.one_cpu.gemm_cold_seconds_per_byte =
      one_core.host.all_cpus.gemm_cold_seconds_per_byte = 0;
  one_core.host.one_cpu.conv_in_program = one_core.host.all_cpus.conv_in_program = 1;
  one_core.host.one_cpu.pool_in_program = one_core.host.all_cpus.pool_in_program = 1;
  one_core.host.one_cpu.pool_grad_in_program = one_core.host.all_cpus.pool_grad_in_program = 1;
  one_core.host.one_cpu.elementwise_in_program = one_core.host.all_cpus.elementwise_in_program = 1;
  one_core.host.one_cpu.elementwise_step_overhead =
      one_core.host.all_cpus.elementwise_step_overhead = 0;
  one_core.host.one_cpu.fused_in_program = one_core.host.all_cpus.fused_in_program = 1;
  one_core.host.one_cpu.fused_step_overhead = one_core.host.all_cpus.fused_step_overhead = 0;
  std::unique_ptr<PinnedTo> pin_one;
  if (threads == 1) pin_one = std::make_unique<PinnedTo>(run.cpu);
  const ProgramTimes t = time_reference_programs(one_core);
  HostCompute& c = threads == 1 ? m.host.one_cpu : m.host.all_cpus;
  // The products' time beyond the curve, per byte of their operands (cold
  // operands cost bytes, not flops); at least 0: a product inside a program
  // is no faster than the same product timed alone, warm (less is the
  // curve's error on the reference programs' shapes, which the validation's
  // larger products do not share).
  c.gemm_in_program = 1;
  c.gemm_cold_seconds_per_byte =
      t.gemm_bytes > 0 ? std::max(0.0, t.gemm_real - t.gemm_sim) / t.gemm_bytes : 0;
  // Elementwise steps: a factor on their roofline time and a fixed cost per
  // step, for each regime.
  // Fused chains on their own line: they read operands broadcast along
  // short rows and reduce along them, and ran 2-4x their roofline where
  // single ops ran near it.
  fit_line(t.other_steps, &c.elementwise_in_program, &c.elementwise_step_overhead);
  fit_line(t.fused_steps, &c.fused_in_program, &c.fused_step_overhead);
  if (t.conv_sim > 0) c.conv_in_program = std::clamp(t.conv_real / t.conv_sim, 0.5, 20.0);
  if (t.pool_sim > 0) c.pool_in_program = std::clamp(t.pool_real / t.pool_sim, 0.5, 20.0);
  if (t.pool_grad_sim > 0)
    c.pool_grad_in_program = std::clamp(t.pool_grad_real / t.pool_grad_sim, 0.5, 20.0);
  const char* unit = threads == 1 ? " thread" : " threads";
  cal.points.push_back(
      {cat("reference programs' products, ", threads, unit), t.gemm_real, 0, t.gemm_sim});
  cal.points.push_back(
      {cat("reference CNN's convolutions, ", threads, unit), t.conv_real, 0, t.conv_sim});
  cal.points.push_back(
      {cat("reference CNN's pooling, ", threads, unit), t.pool_real, 0, t.pool_sim});
  cal.points.push_back({cat("reference CNN's pooling gradients, ", threads, unit), t.pool_grad_real,
                        0, t.pool_grad_sim});
  cal.points.push_back(
      {cat("reference programs' other steps, ", threads, unit), t.other_real, 0, t.other_sim});
}

// Bytes/s each rank streams while every CPU has a rank streaming its own:
// replicated ranks, each a chain of unfused relus over `bytes` per step
// (read and written), the first processor's relus timed.
double busy_stream_bandwidth(int cpus, double bytes) {
  const Profile p = ReplicatedChain(cpus, static_cast<int64_t>(bytes / 8), 6).profile(2, 8);
  if (p.programs.empty()) return 0;
  for (const ProfileRow& r : p.programs.front().by_type)
    if (r.type == "relu" && r.seconds > 0) return r.bytes / r.seconds;
  return 0;
}

// What every CPU computing at once costs each (one BLAS thread each).
void measure_busy_cpus(Calibration& cal, const CalibrationRun& run) {
  Topology& m = cal.machine;
  openblas_set_num_threads(1);
  // Steps well beyond a rank's share of the cache.
  const double bytes = std::max(32.0 * (1 << 20), 4 * m.host.cache_bytes / run.cpus);
  m.host.memory_bandwidth_busy = busy_stream_bandwidth(run.cpus, bytes);
  cal.points.push_back(
      {cat("streaming ", bytes / (1 << 20), " MiB a step on each of ", run.cpus, " ranks at once"),
       bytes / std::max(1.0, m.host.memory_bandwidth_busy), m.host.memory_bandwidth_busy, 0});
  const BusyFit fit = busy_factor(run.cpus, run.cpu, m);
  // Below 1 when the simulation's shared cache and memory give more than
  // the ranks lose.
  m.host.busy_in_program = std::clamp(fit.factor, 0.8, 3.0);
  m.host.cpu_spread = fit.spread;
  // At most 0.02 (a second of compute, 20 ms apart; 3-6 ms on the
  // development VM): ranks that reach their collectives further apart are a
  // machine in trouble, not a pace.
  m.host.collective_skew = std::min(fit.skew, 0.02);
  for (const auto& [alone, busy] : fit.runs) {
    cal.points.push_back(
        {cat("a reference program at ", run.cpus, "x its batch, run on CPU ", run.cpu), alone, 0,
         0});
    cal.points.push_back(
        {cat("the same, data-parallel on ", run.cpus, " ranks at once"), busy, 0, 0});
  }
  // (The ranks at once counted at the level of the rank alone: the factor
  // is their ratio.)
  cal.points.push_back(
      {"their compute steps a run, the rank alone", fit.alone, 0, fit.simulated_alone});
  cal.points.push_back({"the same, the mean rank at once", fit.compute, 0,
                        fit.simulated_alone > 0 ? fit.simulated_compute * m.host.busy_in_program *
                                                      fit.alone / fit.simulated_alone
                                                : 0});
  cal.points.push_back({"their collective steps a run, waits included", fit.collectives, 0,
                        fit.simulated_collectives + m.host.collective_skew * fit.per_skew});
  measure_busy_product_bandwidth(cal, run.cpus);
  openblas_set_num_threads(run.blas_threads);
}

// Each link measured on 3 fresh sets of ranks, the medians kept: one set
// can read twice as slow as the next (loopback TCP: 1.0 or 2.2 ms for a
// 4 MiB allreduce, by where the kernel puts its threads).
LinkTimes median_of_3(const std::function<LinkTimes()>& measure) {
  std::vector<double> latency, allreduce;
  for (int i = 0; i < 3; ++i) {
    const LinkTimes t = measure();
    latency.push_back(t.latency);
    allreduce.push_back(t.allreduce);
  }
  LinkTimes r;
  r.latency = median(latency);
  r.allreduce = median(allreduce);
  return r;
}

// Latency and bandwidth between ranks as threads, as processes (shared
// memory) and over TCP only, two of them and twice as many as CPUs.
void measure_links(Calibration& cal, const CalibrationRun& run) {
  Topology& m = cal.machine;
  const int cpus = run.cpus;
  run.say("ranks as threads (in-process transport)");
  const LinkTimes threads = median_of_3([] { return link_between_threads(2); });
  const LinkTimes threads_over = median_of_3([&] { return link_between_threads(2 * cpus); });
  run.say("ranks as processes (TCP and shared memory)");
  const LinkTimes processes = median_of_3([] { return link_between_processes(2); });
  const LinkTimes processes_over = median_of_3([&] { return link_between_processes(2 * cpus); });
  run.say("ranks as processes over TCP only");
  const LinkTimes tcp = median_of_3([] { return link_between_processes(2, false); });
  const std::string over = cat(" (", 2 * cpus, " ranks)");
  const struct {
    std::string what;
    const LinkTimes& times;
    double* bandwidth;
    double* latency;
  } links[] = {
      {"2 threads", threads, &m.node_link_bandwidth, &m.node_link_latency},
      {"threads" + over, threads_over, &m.host.threads_oversubscribed_bandwidth,
       &m.host.threads_oversubscribed_latency},
      {"2 processes", processes, &m.host.process_link_bandwidth, &m.host.process_link_latency},
      {"2 processes over TCP", tcp, &m.host.tcp_link_bandwidth, &m.host.tcp_link_latency},
      {"processes" + over, processes_over, &m.host.processes_oversubscribed_bandwidth,
       &m.host.processes_oversubscribed_latency},
  };
  for (const auto& l : links) {
    *l.latency = l.times.latency;
    *l.bandwidth = l.times.bandwidth();
    cal.points.push_back({"1-byte message one way, " + l.what, l.times.latency, 0, 0});
    cal.points.push_back({"allreduce 4 MiB, " + l.what, l.times.allreduce, *l.bandwidth, 0});
  }
  if (cpus >= 2) {
    run.say("waking a rank that blocked in a collective");
    m.host.collective_wake = collective_wake_between_threads();
    m.host.collective_wake_after = std::chrono::duration<double>(kInProcessSpin).count();
    cal.points.push_back({"waking a blocked rank, 2 threads", m.host.collective_wake, 0, 0});
  }
}

// The reference MLP on twice as many ranks as CPUs, as threads and as
// processes, against the simulation of it with the figures so far: what
// taking turns costs, as a wait at each collective.
void measure_crowding(Calibration& cal, const CalibrationRun& run) {
  Topology& m = cal.machine;
  const int crowd = 2 * run.cpus;
  const std::string over = cat(" (", crowd, " ranks)");
  // The compute factor first: the waits below are fitted beside it.
  std::vector<std::pair<double, double>> runs;
  m.host.oversubscribed_in_program =
      std::clamp(crowded_factor(run.cpus, m.host.threads_run_overhead, m, &runs), 0.8, 3.0);
  for (const auto& [busy, crowded] : runs) {
    cal.points.push_back(
        {cat("a reference program's run on ", run.cpus, " ranks at once"), busy, 0, 0});
    cal.points.push_back({cat("the same on ", crowd, " ranks"), crowded, 0, 0});
  }
  const auto threads_wait = oversubscribed_wait(m, Topology::HostRanks::kThreads, crowd, false);
  m.host.oversubscribed_wait = threads_wait.wait;
  cal.points.push_back({cat("reference MLP on ", crowd, " ranks as threads"), threads_wait.measured,
                        0, threads_wait.predicted});
  const auto processes_wait = oversubscribed_wait(m, Topology::HostRanks::kProcesses, crowd, true);
  // At least a nanosecond: 0 in a machine file means "as threads".
  m.host.processes_oversubscribed_wait = std::max(processes_wait.wait, 1e-9);
  // A message to a rank that waits for its turn: the 1-byte ping-pong
  // (ranks that only spin for each other) leaves out the scheduling delay.
  m.host.processes_oversubscribed_latency += processes_wait.extra_latency;
  cal.points.push_back({cat("latency in a program, processes", over),
                        m.host.processes_oversubscribed_latency, 0, 0});
  cal.points.push_back({cat("reference MLP on ", crowd, " ranks as processes"),
                        processes_wait.measured, 0, processes_wait.predicted});
  cal.points.push_back({cat("reference MLP on ", crowd, " ranks as processes, hybrid"),
                        processes_wait.hybrid_measured, 0, processes_wait.hybrid_predicted});
  for (const WaitFit* fit : {&threads_wait, &processes_wait})
    for (const double one : fit->one_rank_measured)
      cal.points.push_back(
          {"reference MLP on one rank beside them (the crowded steps are "
           "counted at its predicted level)",
           one, 0, fit->one_rank_predicted});
}

Calibration calibrate_once(bool progress) {
  CalibrationRun run;
  run.progress = progress;
  const std::vector<int> cpus = allowed_cpus();
  run.cpus = static_cast<int>(cpus.size());
  run.cpu = cpus.front();
  run.blas_threads = openblas_get_num_threads();
  Calibration cal;
  Topology& m = cal.machine;
  // One node of one device per CPU; runs below choose devices_per_node.
  m.name = "host";
  m.network = Topology::Network::kSwitched;
  m.nodes = 1;
  m.devices_per_node = run.cpus;
  m.cores_per_chip = 1;
  m.node_fabric = Topology::NodeFabric::kSwitch;
  m.host_cpus = run.cpus;

  // Single-thread figures first: one BLAS thread, as each rank of a mesh of
  // at least `cpus` ranks has, all on one CPU.
  openblas_set_num_threads(1);
  {
    const PinnedTo pinned(run.cpu);
    run.say("executor overheads");
    measure_overheads(cal);
    run.say("elementwise bandwidth and flop rates");
    measure_elementwise(cal);
    run.say("matrix products on one thread");
    measure_gemm(cal, 1);
    measure_small_products(cal);
  }
  const int all = std::min(run.cpus, run.blas_threads);
  if (all > 1) {
    run.say("matrix products on every CPU");
    measure_gemm(cal, all);
  }
  run.say("reference programs");
  // (On a machine where BLAS has one thread for all, the factors keep their
  // default of 1, as they always have.)
  if (all > 1) {
    measure_in_program(cal, run, 1);
    measure_in_program(cal, run, all);
  }
  openblas_set_num_threads(run.blas_threads);

  run.say("a run of ranks as threads");
  m.host.threads_run_overhead = threads_run_overhead_seconds(run.cpus);
  cal.points.push_back({cat("a run on ", run.cpus, " ranks as threads, beyond its steps"),
                        m.host.threads_run_overhead, 0, 0});
  // (After the links: the busy runs' collectives are simulated on them.)
  measure_links(cal, run);
  if (run.cpus > 1) {
    run.say("every CPU computing at once");
    measure_busy_cpus(cal, run);
  }
  run.say("more ranks than CPUs");
  measure_crowding(cal, run);

  const double ram =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (ram > 0) m.core_memory = ram / run.cpus;
  m.sources = cat("measured by mtf-sim --calibrate: ", cpu_model(), ", ", run.cpus,
                  " CPUs, OpenBLAS core ", openblas_get_corename());
  m.validate();
  return cal;
}

// What a rank started by run_ranks_as_processes does, by job name.
std::string calibration_job(const std::string& job, Transport& t) {
  if (job == "link") return link_answer(t);
  if (job == "mlp" || job == "mlp-hybrid")
    return cat(time_reference_mlp_rank(t, job == "mlp-hybrid"), "\n");
  throw ValueError("unknown calibration job \"" + job + "\"");
}

}  // namespace

int calibration_rank(int argc, char** argv) {
  return calibration_rank_main(argc, argv, calibration_job);
}

Calibration calibrate_host(bool progress, int rounds) {
  if (rounds < 1)
    throw ValueError("calibration rounds must be at least 1, not " + std::to_string(rounds));
  std::vector<Calibration> all;
  std::vector<Topology> machines;
  for (int r = 0; r < rounds; ++r) {
    if (progress && rounds > 1)
      std::fprintf(stderr, "calibrating: round %d of %d\n", r + 1, rounds);
    all.push_back(calibrate_once(progress));
    machines.push_back(all.back().machine);
  }
  Calibration cal = all.front();
  cal.machine = median_of_calibrations(machines);
  cal.steadiness = steadiness_report(machines);
  return cal;
}

}  // namespace mtf::tools
