// sim_host_util.h — a 2-CPU host of round figures and a cost-only
// simulation config, for the host model's tests.
#pragma once

#include <string>

#include "mtf/mtf.h"

namespace mtf {

// Round figures: a 2-CPU host, 100 GFLOP/s a thread on large products.
inline Topology host(int ranks) {
  Topology t;
  t.apply_overrides(
      "name=host,network=switched,nodes=1,host_cpus=2,gemm_flops=100e9,gemm_half_flops=1e5,"
      "gemm_narrow=10,gemm_flops_all_cpus=180e9,gemm_half_flops_all_cpus=2e6,"
      "gemm_narrow_all_cpus=40,core_flops=10e9,transcendental_cost=20,cache_bytes=1e6,"
      "cache_bandwidth=80e9,chip_memory_bandwidth=20e9,step_overhead=1e-6,run_overhead=2e-6,"
      "threads_run_overhead=100e-6,node_link_bandwidth=5e9,node_link_latency=3e-6,"
      "process_link_bandwidth=8e9,process_link_latency=2e-6");
  t.devices_per_node = ranks;
  return t;
}

// A cost-only simulation of one mesh (empty: one processor) on `topo`.
inline MeshConfig cost_only(const Topology& topo, const std::string& mesh = "",
                            const std::string& layout = "") {
  MeshConfig c;
  if (!mesh.empty()) c.mesh_shape = MeshShape(mesh);
  if (!layout.empty()) c.layout = LayoutRules(layout);
  c.impl = MeshImpl::kSimulated;
  c.sim->mode = SimMode::kCostOnly;
  c.sim->topology = topo;
  return c;
}

// The MLP's training step on a simulated host.
inline SimReport simulate_mlp(const Topology& topo, const std::string& mesh,
                              const std::string& layout, bool fuse = true) {
  Graph graph;
  Mesh m(graph, "m");
  Dimension batch{"batch", 64}, in{"in", 256}, hidden{"hidden", 512}, classes{"classes", 10};
  Tensor x = placeholder(m, {batch, in}, float32, "x");
  Tensor labels = placeholder(m, {batch}, int32, "labels");
  Tensor w1 = get_variable(m, "w1", {in, hidden});
  Tensor w2 = get_variable(m, "w2", {hidden, classes});
  Tensor h = relu(einsum({x, w1}, {batch, hidden}));
  Tensor logits = einsum({h, w2}, {batch, classes});
  Tensor loss =
      reduce_mean(softmax_cross_entropy_with_logits(logits, one_hot(labels, classes), classes));
  auto train = SgdOptimizer(0.1f).minimize(loss);
  MeshConfig c = cost_only(topo, mesh, layout);
  c.fuse = fuse;
  Session s(graph, c);
  s.run({loss}, {}, train);
  return s.simulation_report();
}

}  // namespace mtf
