#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "collectives/ring.h"
#include "mtf/collectives.h"
#include "sim/engine.h"
#include "sim/machine.h"

namespace mtf::sim {

CostModel::CostModel(const Topology& topo, const MeshShape& mesh) : topo_(topo), mesh_(mesh) {
  const Machine machine(topo);
  const CoreMapping mapping = CoreMapping::automatic(mesh, topo);
  for (int axis = 0; axis < mesh.ndims(); ++axis) {
    // Every group's ring steps at once (a collective runs on all groups of
    // the axis together): how many cross each directed link.
    std::vector<std::vector<int>> routes;
    std::map<int, int> use;
    std::vector<bool> seen(mesh.size(), false);
    for (int64_t p = 0; p < mesh.size(); ++p) {
      if (seen[p]) continue;
      const Group g = Group::along_axes(mesh, p, {axis});
      for (int r : g.ranks) seen[r] = true;
      if (g.size() < 2) continue;
      for (int i = 0; i < g.size(); ++i) {
        std::vector<int> links;
        machine.route(mapping.physical[g.ranks[i]], mapping.physical[g.ranks[(i + 1) % g.size()]],
                      &links);
        for (int l : links) ++use[l];
        routes.push_back(std::move(links));
      }
    }
    AxisCost c;
    for (const std::vector<int>& links : routes) {
      double latency = 0, spb = 0;
      for (int l : links) {
        latency += machine.latency(l);
        spb = std::max(spb, use[l] / machine.bandwidth(l));
      }
      c.latency = std::max(c.latency, latency);
      c.seconds_per_byte = std::max(c.seconds_per_byte, spb);
    }
    axes_.push_back(c);
  }
}

double CostModel::allreduce_time(int axis, double bytes) const {
  const double p = static_cast<double>(mesh_.dims()[axis].size);
  if (p < 2) return 0;
  const AxisCost& c = axes_[axis];
  if (bytes <= static_cast<double>(collectives::kSmallAllreduceBytes)) {
    // Recursive doubling: partners 1, 2, 4, ... ring positions apart.
    double t = 0;
    for (double d = 1; d < p; d *= 2)
      t += c.latency * std::min(d, p - d) + bytes * c.seconds_per_byte;
    return t;
  }
  // Bidirectional ring: half the buffer each way, reduce-scatter + allgather.
  return 2 * (p - 1) * (c.latency + bytes / (2 * p) * c.seconds_per_byte);
}

double CostModel::allgather_time(int axis, double block_bytes) const {
  const double p = static_cast<double>(mesh_.dims()[axis].size);
  const AxisCost& c = axes_[axis];
  return (p - 1) * (c.latency + block_bytes * c.seconds_per_byte);
}

CostEstimate CostModel::estimate(
    const Program& program, const std::vector<std::pair<std::string, int64_t>>& variables) const {
  CostEstimate e;
  for (const Step& s : program.steps) {
    switch (s.kind) {
      case Step::Kind::kCompute:
      case Step::Kind::kSplit:
        e.compute += step_compute_time(program, s, topo_);
        break;
      case Step::Kind::kAllgather:
        e.communication += allgather_time(
            s.mesh_axes[0], static_cast<double>(program.slot_bytes(s.input_slots[0])));
        break;
      case Step::Kind::kAllreduce:
        for (int a : s.mesh_axes)
          e.communication +=
              allreduce_time(a, static_cast<double>(program.slot_bytes(s.input_slots[0])));
        break;
    }
  }
  e.step_time = e.compute + e.communication;
  e.memory = estimate_memory(program, variables);
  return e;
}

}  // namespace mtf::sim
