// A host's compute and link model (Topology with host_cpus > 0): the
// figures mtf-sim --calibrate measures, applied to steps and messages.
#include <algorithm>
#include <cmath>
#include <utility>

#include "mtf/sim.h"

namespace mtf {

namespace {

// Where a rank's BLAS threads lie between one (0) and every CPU (1): ranks
// that fill the CPUs get a thread each, a single rank all of them.
double thread_share(const Topology& t) {
  if (t.host_cpus <= 1) return 0;
  return static_cast<double>(t.host_rank_threads() - 1) / (t.host_cpus - 1);
}

double between(double one_thread, double all_cpus, double share) {
  return one_thread + share * (all_cpus - one_thread);
}

// The link between two ranks of a host, as they run: its bandwidth and
// latency.
std::pair<double, double> host_link(const Topology& t) {
  using R = Topology::HostRanks;
  const bool crowded = t.devices_per_node * t.cores_per_chip > t.host_cpus;
  switch (t.host_ranks) {
    case R::kThreads:
      if (crowded && t.host.threads_oversubscribed_bandwidth > 0)
        return {t.host.threads_oversubscribed_bandwidth, t.host.threads_oversubscribed_latency};
      return {t.node_link_bandwidth, t.node_link_latency};
    case R::kProcesses:
      if (crowded && t.host.processes_oversubscribed_bandwidth > 0)
        return {t.host.processes_oversubscribed_bandwidth, t.host.processes_oversubscribed_latency};
      return {t.host.process_link_bandwidth, t.host.process_link_latency};
    case R::kTcp:
      return {t.host.tcp_link_bandwidth, t.host.tcp_link_latency};
  }
  return {t.node_link_bandwidth, t.node_link_latency};
}

// What a rank of ranks that fill the CPUs keeps of its products' rates
// bound by bytes (at most 1): they stream their matrices at once. Measured
// as gemm_memory_bandwidth_busy against one thread alone (on an AMD EPYC
// VM two ranks of a thread each read cold 2 MiB matrices at 7.8-10 GB/s
// apiece where one thread alone read 12.4-13.4), for ranks of one thread,
// and towards 1 for ranks with more threads (a single rank: all of it);
// unmeasured, each rank's share of the all-CPU rate, which that VM read at
// 21-23 GB/s for one rank's two threads. `bandwidth`: the rank's own rate.
double bandwidth_kept(const Topology& t, double bandwidth) {
  const double one = t.host.one_cpu.gemm_memory_bandwidth, busy = t.host.gemm_memory_bandwidth_busy;
  if (t.host_cpus <= 1) return 1;
  if (busy > 0 && one > 0) return between(std::min(1.0, busy / one), 1.0, thread_share(t));
  const double all = t.host.all_cpus.gemm_memory_bandwidth;
  if (all <= 0) return 1;
  return std::min(1.0, all * t.host_rank_threads() / t.host_cpus / bandwidth);
}

}  // namespace

double Topology::host_gemm_seconds(double m, double n, double k, DType dtype, bool one_thread,
                                   bool in_program_factor, double* by_flops) const {
  double peak = host.one_cpu.gemm_flops > 0 ? host.one_cpu.gemm_flops : core_flops,
         half = host.one_cpu.gemm_half_flops, narrow = host.one_cpu.gemm_narrow,
         in_program = host.one_cpu.gemm_in_program, speedup = host.one_cpu.gemm_bfloat16_speedup,
         bandwidth = host.one_cpu.gemm_memory_bandwidth, cached = host.one_cpu.gemm_cache_bandwidth;
  // Products too small for OpenBLAS to share out run on one thread anyway.
  const double x = !one_thread && m * n * k > host.gemm_threads_from && host.all_cpus.gemm_flops > 0
                       ? thread_share(*this)
                       : 0;
  if (x > 0) {
    peak = between(peak, host.all_cpus.gemm_flops, x);
    half = between(half, host.all_cpus.gemm_half_flops, x);
    narrow = between(narrow, host.all_cpus.gemm_narrow, x);
    in_program = between(in_program, host.all_cpus.gemm_in_program, x);
    speedup = between(speedup, host.all_cpus.gemm_bfloat16_speedup, x);
    if (host.all_cpus.gemm_memory_bandwidth > 0)
      bandwidth = between(bandwidth, host.all_cpus.gemm_memory_bandwidth, x);
    if (host.all_cpus.gemm_cache_bandwidth > 0)
      cached = between(cached, host.all_cpus.gemm_cache_bandwidth, x);
  }
  // The narrow term is fitted on products whose narrowest side is 10 or
  // more (mtf-sim --calibrate's shapes); extrapolated to a side of 1 it
  // made a matrix-vector product 12-29x its square rate, twice the bytes'
  // time decoding measured. Narrower products take the side-10 curve, and
  // the bytes below bound them: the matrix-vector rates are measured.
  constexpr double kNarrowestFitted = 10;
  const double side = std::max(kNarrowestFitted, std::min({m, n, k}));
  double seconds =
      (2 * m * n * k + half) / peak * (1 + narrow / side) * (in_program_factor ? in_program : 1);
  if (dtype == DType::kBFloat16) {
    seconds /= speedup;
  } else if (host.gemm_call_seconds > 0 && host.gemm_small_flops > 0 &&
             m * n * k <= host.gemm_threads_from) {
    seconds = std::min(seconds, host.gemm_call_seconds + 2 * m * n * k / host.gemm_small_flops);
  }
  if (by_flops) *by_flops = seconds;
  if (bandwidth > 0) {
    const double bytes = (m * k + k * n + m * n) * static_cast<double>(dtype_size(dtype));
    constexpr double kSmall = 1 << 20, kLarge = 4 << 20;
    const double w = std::clamp((bytes - kSmall) / (kLarge - kSmall), 0.0, 1.0);
    const double rate =
        (cached > 0 ? between(cached, bandwidth, w) : bandwidth) * bandwidth_kept(*this, bandwidth);
    seconds = std::max(seconds, bytes / rate);
  }
  return seconds;
}

namespace {

// A factor of a host's HostCompute for the threads a rank gets (all_cpus'
// when measured, else one_cpu's).
double thread_factor(const Topology& t, double HostCompute::*factor) {
  const double one = t.host.one_cpu.*factor, all = t.host.all_cpus.*factor;
  return between(one, all > 0 ? all : one, thread_share(t));
}

}  // namespace

double Topology::host_cold_operand_seconds(double bytes) const {
  // (0 for every CPU is a measurement: the products ran at the curve.)
  return bytes * between(host.one_cpu.gemm_cold_seconds_per_byte,
                         host.all_cpus.gemm_cold_seconds_per_byte, thread_share(*this));
}

double Topology::host_conv_factor() const {
  return thread_factor(*this, &HostCompute::conv_in_program);
}

PoolingStep pooling_step(const std::string& op_type) {
  if (op_type.rfind("max_pool", 0) != 0 && op_type.rfind("avg_pool", 0) != 0)
    return PoolingStep::kNone;
  const bool gradient = op_type.size() > 5 && op_type.compare(op_type.size() - 5, 5, "_grad") == 0;
  return gradient ? PoolingStep::kGradient : PoolingStep::kPool;
}

double Topology::host_pool_factor(bool gradient) const {
  return thread_factor(
      *this, gradient ? &HostCompute::pool_grad_in_program : &HostCompute::pool_in_program);
}

double Topology::host_roofline_seconds(double flops, double bytes) const {
  return host_paced_seconds(flops, bytes, 1.0);
}

double Topology::host_paced_seconds(double flops, double bytes, double factor) const {
  // The share of the other CPUs that ranks computing at once keep busy.
  const int devices = std::max(1, devices_per_node * cores_per_chip);
  const double others = host_cpus > 1 ? static_cast<double>(std::min(devices, host_cpus) - 1) /
                                            static_cast<double>(host_cpus - 1)
                                      : 0.0;
  const double cache = host.cache_bytes / between(1.0, std::max(1, host_cpus), others);
  const double memory =
      host.memory_bandwidth_busy > 0
          ? between(chip_memory_bandwidth,
                    std::min(host.memory_bandwidth_busy, chip_memory_bandwidth), others)
          : chip_memory_bandwidth;
  const double near = host.cache_bandwidth > 0 ? host.cache_bandwidth : memory;
  const double paced = factor * std::max(flops / core_flops, bytes / near);
  if (bytes <= cache) return paced;
  // Beyond the cache, the memory's rate bounds the step only where it is
  // slower than the step's own pace.
  return std::max(paced, std::max(flops / core_flops, bytes / memory));
}

int Topology::host_rank_threads() const {
  if (host_cpus <= 1) return 1;
  const int devices = std::max(1, devices_per_node * cores_per_chip);
  return std::max(1, host_cpus / std::min(devices, host_cpus));
}

double Topology::host_elementwise_seconds(double flops, double bytes, bool fused, int split) const {
  // A step shared out over threads of its own: the figures of one thread
  // alone (the all-CPU factors were measured on float32 programs, whose
  // steps run on one thread while OpenBLAS's idle workers take the others:
  // 1.2-1.5x the one-thread factors on an AMD EPYC VM), its roofline divided among them.
  const double x = split > 1 ? 0 : thread_share(*this);
  const bool own = fused && host.one_cpu.fused_in_program > 0;
  const HostCompute& one = host.one_cpu;
  const HostCompute& all = host.all_cpus;
  const double factor =
      own ? between(one.fused_in_program,
                    all.fused_in_program > 0 ? all.fused_in_program : one.fused_in_program, x)
          : between(one.elementwise_in_program, all.elementwise_in_program, x);
  const double overhead =
      own ? between(one.fused_step_overhead, all.fused_step_overhead, x)
          : between(one.elementwise_step_overhead, all.elementwise_step_overhead, x);
  return host_paced_seconds(flops, bytes, factor) / std::max(1, split) + overhead;
}

double Topology::host_step_seconds(double work) const {
  const int devices = devices_per_node * cores_per_chip;
  const double turns = std::max(1.0, static_cast<double>(devices) / host_cpus);
  double factor = 1;
  if (devices > host_cpus) {
    // Every CPU is filled, and the turns cost more beyond that.
    factor = host.busy_in_program * host.oversubscribed_in_program;
  } else if (host_cpus > 1) {
    // The other CPUs the ranks keep busy, as a share of all the others.
    factor = between(1.0, host.busy_in_program,
                     static_cast<double>(devices - 1) / static_cast<double>(host_cpus - 1));
  }
  return (host.step_overhead + work) * turns * factor;
}

double Topology::host_collective_wait() const {
  if (host_cpus <= 0) return 0;
  if (devices_per_node * cores_per_chip <= host_cpus) return 0.0;
  if (host_ranks != HostRanks::kThreads && host.processes_oversubscribed_wait > 0)
    return host.processes_oversubscribed_wait;
  return host.oversubscribed_wait;
}

namespace {

// Ranks as threads of a host, more than one and at most one per CPU: the
// ranks whose collectives pay the wake and the skew (measured so).
bool threads_filling_at_most_the_cpus(const Topology& t) {
  if (t.host_cpus <= 0 || t.host_ranks != Topology::HostRanks::kThreads) return false;
  const int devices = t.devices_per_node * t.cores_per_chip;
  return devices > 1 && devices <= t.host_cpus;
}

}  // namespace

double Topology::host_collective_wake(double compute) const {
  if (host.collective_wake <= 0 || !threads_filling_at_most_the_cpus(*this)) return 0;
  return host.cpu_spread * compute > host.collective_wake_after ? host.collective_wake : 0;
}

double Topology::host_collective_skew(double compute) const {
  if (!threads_filling_at_most_the_cpus(*this)) return 0;
  return host.collective_skew * std::sqrt(std::max(0.0, compute));
}

const char* Topology::host_ranks_name() const {
  switch (host_ranks) {
    case HostRanks::kThreads:
      return "threads";
    case HostRanks::kProcesses:
      return "processes";
    case HostRanks::kTcp:
      return "tcp";
  }
  return "?";
}

double Topology::host_run_overhead(int64_t ranks) const {
  if (host_cpus <= 0) return 0;
  return ranks > 1 && host_ranks == HostRanks::kThreads ? host.threads_run_overhead
                                                        : host.run_overhead;
}

double Topology::fabric_bandwidth() const {
  return host_cpus > 0 ? host_link(*this).first : node_link_bandwidth;
}

double Topology::fabric_latency() const {
  return host_cpus > 0 ? host_link(*this).second : node_link_latency;
}

}  // namespace mtf
