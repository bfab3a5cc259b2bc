// A host's compute and link model (Topology with host_cpus > 0): the
// figures mtf-sim --calibrate measures, applied to steps and messages.
#include <algorithm>
#include <utility>

#include "mtf/sim.h"

namespace mtf {

namespace {

// Where a rank's BLAS threads lie between one (0) and every CPU (1): ranks
// that fill the CPUs get a thread each, a single rank all of them.
double thread_share(const Topology& t) {
  if (t.host_cpus <= 1) return 0;
  const int devices = t.devices_per_node * t.cores_per_chip;
  const int threads = std::max(1, t.host_cpus / std::min(devices, t.host_cpus));
  return static_cast<double>(threads - 1) / (t.host_cpus - 1);
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
      if (crowded && t.threads_oversubscribed_bandwidth > 0)
        return {t.threads_oversubscribed_bandwidth, t.threads_oversubscribed_latency};
      return {t.node_link_bandwidth, t.node_link_latency};
    case R::kProcesses:
      if (crowded && t.processes_oversubscribed_bandwidth > 0)
        return {t.processes_oversubscribed_bandwidth, t.processes_oversubscribed_latency};
      return {t.process_link_bandwidth, t.process_link_latency};
    case R::kTcp:
      return {t.tcp_link_bandwidth, t.tcp_link_latency};
  }
  return {t.node_link_bandwidth, t.node_link_latency};
}

}  // namespace

double Topology::host_gemm_seconds(double m, double n, double k) const {
  double peak = gemm_flops > 0 ? gemm_flops : core_flops, half = gemm_half_flops,
         narrow = gemm_narrow, in_program = gemm_in_program;
  // Products too small for OpenBLAS to share out run on one thread anyway.
  const double x =
      m * n * k > gemm_threads_from && gemm_flops_all_cpus > 0 ? thread_share(*this) : 0;
  if (x > 0) {
    peak = between(peak, gemm_flops_all_cpus, x);
    half = between(half, gemm_half_flops_all_cpus, x);
    narrow = between(narrow, gemm_narrow_all_cpus, x);
    in_program = between(in_program, gemm_in_program_all_cpus, x);
  }
  const double side = std::max(1.0, std::min({m, n, k}));
  return (2 * m * n * k + half) / peak * (1 + narrow / side) * in_program;
}

double Topology::host_elementwise_seconds(double flops, double bytes) const {
  const double bw =
      bytes <= cache_bytes && cache_bandwidth > 0 ? cache_bandwidth : chip_memory_bandwidth;
  const double x = thread_share(*this);
  const double factor = between(elementwise_in_program, elementwise_in_program_all_cpus, x);
  const double overhead = between(elementwise_step_overhead, elementwise_step_overhead_all_cpus, x);
  return std::max(flops / core_flops, bytes / bw) * factor + overhead;
}

double Topology::host_step_seconds(double work) const {
  const int devices = devices_per_node * cores_per_chip;
  const double turns = std::max(1.0, static_cast<double>(devices) / host_cpus);
  double factor = 1;
  if (devices > host_cpus) {
    factor = oversubscribed_in_program;
  } else if (host_cpus > 1) {
    // The other CPUs the ranks keep busy, as a share of all the others.
    factor = between(1.0, busy_in_program,
                     static_cast<double>(devices - 1) / static_cast<double>(host_cpus - 1));
  }
  return (step_overhead + work) * turns * factor;
}

double Topology::host_collective_wait() const {
  if (host_cpus <= 0) return 0;
  if (devices_per_node * cores_per_chip <= host_cpus) return 0.0;
  if (host_ranks != HostRanks::kThreads && processes_oversubscribed_wait > 0)
    return processes_oversubscribed_wait;
  return oversubscribed_wait;
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
  return ranks > 1 && host_ranks == HostRanks::kThreads ? threads_run_overhead : run_overhead;
}

double Topology::fabric_bandwidth() const {
  return host_cpus > 0 ? host_link(*this).first : node_link_bandwidth;
}

double Topology::fabric_latency() const {
  return host_cpus > 0 ? host_link(*this).second : node_link_latency;
}

}  // namespace mtf
