// Topology::to_file: every setting as `key = value` lines, which
// Topology::load_file (topology.cc) reads back.
#include <sstream>
#include <string>

#include "mtf/sim.h"

namespace mtf {

std::string Topology::to_file() const {
  std::ostringstream o;
  o.precision(6);
  auto line = [&](const char* key, const auto& value) { o << key << " = " << value << "\n"; };
  line("name", name);
  line("network", network == Network::kTorus ? "torus" : "switched");
  std::string dims;
  for (size_t i = 0; i < chips.size(); ++i) dims += (i ? "x" : "") + std::to_string(chips[i]);
  line("chips", dims);
  line("wraparound", wraparound ? "true" : "false");
  line("cores_per_chip", cores_per_chip);
  line("core_flops", core_flops);
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kBFloat16}) {
    if (dtype_flops[static_cast<size_t>(d)] > 0)
      o << "core_flops." << dtype_name(d) << " = " << dtype_flops[static_cast<size_t>(d)] << "\n";
  }
  line("core_memory", core_memory);
  line("chip_memory_bandwidth", chip_memory_bandwidth);
  line("link_bandwidth", link_bandwidth);
  line("link_latency", link_latency);
  line("core_link_bandwidth", core_link_bandwidth);
  line("core_link_latency", core_link_latency);
  line("nodes", nodes);
  line("devices_per_node", devices_per_node);
  line("node_fabric", node_fabric == NodeFabric::kSwitch ? "switch" : "ring");
  line("node_link_bandwidth", node_link_bandwidth);
  line("node_link_latency", node_link_latency);
  line("nics_per_node", nics_per_node);
  line("nic_bandwidth", nic_bandwidth);
  line("network_latency", network_latency);
  line("nodes_per_leaf", nodes_per_leaf);
  line("oversubscription", oversubscription);
  line("gemm_flops", host.one_cpu.gemm_flops);
  line("gemm_half_flops", host.one_cpu.gemm_half_flops);
  line("gemm_narrow", host.one_cpu.gemm_narrow);
  line("gemm_flops_all_cpus", host.all_cpus.gemm_flops);
  line("gemm_half_flops_all_cpus", host.all_cpus.gemm_half_flops);
  line("gemm_narrow_all_cpus", host.all_cpus.gemm_narrow);
  line("gemm_bfloat16_speedup", host.one_cpu.gemm_bfloat16_speedup);
  line("gemm_bfloat16_speedup_all_cpus", host.all_cpus.gemm_bfloat16_speedup);
  line("gemm_memory_bandwidth", host.one_cpu.gemm_memory_bandwidth);
  line("gemm_memory_bandwidth_all_cpus", host.all_cpus.gemm_memory_bandwidth);
  line("gemm_cache_bandwidth", host.one_cpu.gemm_cache_bandwidth);
  line("gemm_cache_bandwidth_all_cpus", host.all_cpus.gemm_cache_bandwidth);
  line("gemm_threads_from", host.gemm_threads_from);
  line("gemm_call_seconds", host.gemm_call_seconds);
  line("gemm_small_flops", host.gemm_small_flops);
  line("transcendental_cost", host.transcendental_cost);
  line("random_cost", host.random_cost);
  line("conv_in_program", host.one_cpu.conv_in_program);
  line("conv_in_program_all_cpus", host.all_cpus.conv_in_program);
  line("pool_in_program", host.one_cpu.pool_in_program);
  line("pool_in_program_all_cpus", host.all_cpus.pool_in_program);
  line("pool_grad_in_program", host.one_cpu.pool_grad_in_program);
  line("pool_grad_in_program_all_cpus", host.all_cpus.pool_grad_in_program);
  line("gemm_cold_seconds_per_byte", host.one_cpu.gemm_cold_seconds_per_byte);
  line("gemm_cold_seconds_per_byte_all_cpus", host.all_cpus.gemm_cold_seconds_per_byte);
  line("gemm_in_program", host.one_cpu.gemm_in_program);
  line("gemm_in_program_all_cpus", host.all_cpus.gemm_in_program);
  line("elementwise_in_program", host.one_cpu.elementwise_in_program);
  line("elementwise_step_overhead", host.one_cpu.elementwise_step_overhead);
  line("oversubscribed_in_program", host.oversubscribed_in_program);
  line("busy_in_program", host.busy_in_program);
  line("gemm_memory_bandwidth_busy", host.gemm_memory_bandwidth_busy);
  line("oversubscribed_wait", host.oversubscribed_wait);
  line("processes_oversubscribed_wait", host.processes_oversubscribed_wait);
  line("collective_wake", host.collective_wake);
  line("collective_wake_after", host.collective_wake_after);
  line("cpu_spread", host.cpu_spread);
  line("collective_skew", host.collective_skew);
  line("memory_bandwidth_busy", host.memory_bandwidth_busy);
  line("elementwise_in_program_all_cpus", host.all_cpus.elementwise_in_program);
  line("elementwise_step_overhead_all_cpus", host.all_cpus.elementwise_step_overhead);
  line("fused_in_program", host.one_cpu.fused_in_program);
  line("fused_step_overhead", host.one_cpu.fused_step_overhead);
  line("fused_in_program_all_cpus", host.all_cpus.fused_in_program);
  line("fused_step_overhead_all_cpus", host.all_cpus.fused_step_overhead);
  line("cache_bytes", host.cache_bytes);
  line("cache_bandwidth", host.cache_bandwidth);
  line("step_overhead", host.step_overhead);
  line("run_overhead", host.run_overhead);
  line("threads_run_overhead", host.threads_run_overhead);
  line("process_link_bandwidth", host.process_link_bandwidth);
  line("process_link_latency", host.process_link_latency);
  line("tcp_link_bandwidth", host.tcp_link_bandwidth);
  line("tcp_link_latency", host.tcp_link_latency);
  line("threads_oversubscribed_bandwidth", host.threads_oversubscribed_bandwidth);
  line("threads_oversubscribed_latency", host.threads_oversubscribed_latency);
  line("processes_oversubscribed_bandwidth", host.processes_oversubscribed_bandwidth);
  line("processes_oversubscribed_latency", host.processes_oversubscribed_latency);
  line("host_ranks", host_ranks_name());
  line("host_cpus", host_cpus);
  line("sources", sources);  // set() keeps '#' and line breaks out
  return o.str();
}

}  // namespace mtf
