#include "autolayout/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "collectives/allreduce_algorithms.h"
#include "exec/step_dispatch.h"
#include "mtf/collectives.h"
#include "sim/engine.h"
#include "sim/machine.h"

namespace mtf::sim {

namespace {

// Every group of `axis` exchanging at once, member i with partner(i): the
// slowest pair's route latency and seconds per byte, a link shared by
// several routes giving each its share.
template <typename Partner>
void measure_exchange(const Machine& machine, const CoreMapping& mapping, const MeshShape& mesh,
                      int axis, Partner partner, double* latency, double* seconds_per_byte) {
  std::vector<std::vector<int>> routes;
  std::map<int, int> use;
  std::vector<bool> seen(mesh.size(), false);
  for (int64_t p = 0; p < mesh.size(); ++p) {
    if (seen[p]) continue;
    const Group g = Group::along_axes(mesh, p, {axis});
    for (int r : g.ranks) seen[r] = true;
    if (g.size() < 2) continue;
    for (int i = 0; i < g.size(); ++i) {
      const int j = partner(i, g.size());
      if (j < 0 || j >= g.size() || j == i) continue;
      std::vector<int> links;
      machine.route(mapping.physical[g.ranks[i]], mapping.physical[g.ranks[j]], &links);
      for (int l : links) ++use[l];
      routes.push_back(std::move(links));
    }
  }
  *latency = *seconds_per_byte = 0;
  for (const std::vector<int>& links : routes) {
    double route_latency = 0, spb = 0;
    for (int l : links) {
      route_latency += machine.latency(l);
      spb = std::max(spb, use[l] / machine.bandwidth(l));
    }
    *latency = std::max(*latency, route_latency);
    *seconds_per_byte = std::max(*seconds_per_byte, spb);
  }
}

}  // namespace

CostModel::CostModel(const Topology& topo, const MeshShape& mesh) : topo_(topo), mesh_(mesh) {
  const Machine machine(topo);
  const CoreMapping mapping = CoreMapping::automatic(mesh, topo);
  for (int axis = 0; axis < mesh.ndims(); ++axis) {
    AxisCost c;
    measure_exchange(
        machine, mapping, mesh, axis, [](int i, int n) { return (i + 1) % n; }, &c.latency,
        &c.seconds_per_byte);
    for (int64_t bit = 1; bit < mesh.dims()[axis].size; bit *= 2) {
      Exchange e;
      measure_exchange(
          machine, mapping, mesh, axis, [bit](int i, int) { return i ^ static_cast<int>(bit); },
          &e.latency, &e.seconds_per_byte);
      c.partners.push_back(e);
    }
    axes_.push_back(c);
  }
}

double CostModel::allreduce_time(int axis, double bytes) const {
  const int n = static_cast<int>(mesh_.dims()[axis].size);
  if (n < 2) return 0;
  const double p = n;
  const AxisCost& c = axes_[axis];
  // The algorithm the executors' allreduce() picks on the simulator's
  // transport (tori are not flat networks; switched machines with a switch
  // in each node are). Axes spanning nodes are estimated as one ring,
  // though the run goes hierarchical there.
  switch (collectives::choose_allreduce_algorithm(static_cast<int64_t>(bytes), n, topo_.flat())) {
    case AllreduceAlgorithm::kRecursiveDoubling: {
      // A round per bit of the position, the whole buffer each.
      double t = 0;
      for (const Exchange& e : c.partners) t += e.latency + bytes * e.seconds_per_byte;
      return t;
    }
    case AllreduceAlgorithm::kHalvingDoubling: {
      // Halving then doubling: a round per bit, half the previous round's
      // bytes each round, then the same in reverse.
      double t = 0, part = bytes;
      for (const Exchange& e : c.partners) {
        part /= 2;
        t += 2 * (e.latency + part * e.seconds_per_byte);
      }
      return t;
    }
    case AllreduceAlgorithm::kAuto:
    case AllreduceAlgorithm::kHierarchical:  // never chosen by size alone
    case AllreduceAlgorithm::kRing:
      break;
  }
  // Bidirectional ring: half the buffer each way, reduce-scatter + allgather.
  return 2 * (p - 1) * (c.latency + bytes / (2 * p) * c.seconds_per_byte);
}

double CostModel::halo_time(int axis, double bytes_sent) const {
  // Both directions at once on the ring's links: half the bytes each way.
  const AxisCost& c = axes_[axis];
  return c.latency + bytes_sent / 2 * c.seconds_per_byte;
}

double CostModel::allgather_time(int axis, double block_bytes) const {
  const double p = static_cast<double>(mesh_.dims()[axis].size);
  const AxisCost& c = axes_[axis];
  return (p - 1) * (c.latency + block_bytes * c.seconds_per_byte);
}

namespace {

// Times each step as the executors would run it.
class CostBackend : public exec::StepBackend {
 public:
  CostBackend(const CostModel& model, const Program& program, CostEstimate& e)
      : model_(model), program_(program), e_(e) {}
  void compute(const Step& s) override {
    e_.compute += step_compute_time(program_, s, model_.topology());
  }
  void split(const Step& s) override { compute(s); }
  void pass_through(const Step&) override {}
  void allgather(const Step& s, int64_t) override {
    e_.communication += model_.allgather_time(s.collective.mesh_axes[0], bytes(s));
  }
  void halo(const Step& s) override {
    e_.communication +=
        model_.halo_time(s.collective.mesh_axes[0], static_cast<double>(s.collective.bytes)) +
        halo_copy_time(program_, s, model_.topology());
  }
  void allreduce(const Step& s, int64_t) override {
    for (int a : s.collective.mesh_axes) e_.communication += model_.allreduce_time(a, bytes(s));
  }
  void alltoall(const Step& s, int64_t n) override {
    // n - 1 blocks of a slice's n-th go out, one per step of the ring.
    e_.communication += model_.allgather_time(s.collective.mesh_axes[0], bytes(s) / double(n));
  }

 private:
  double bytes(const Step& s) const {
    return static_cast<double>(program_.slot_bytes(s.input_slots[0]));
  }
  const CostModel& model_;
  const Program& program_;
  CostEstimate& e_;
};

}  // namespace

CostEstimate CostModel::estimate(
    const Program& program, const std::vector<std::pair<std::string, int64_t>>& variables) const {
  CostEstimate e;
  CostBackend backend(*this, program, e);
  for (const Step& s : program.steps) exec::dispatch_step(program.mesh, s, backend);
  e.step_time = e.compute + e.communication;
  e.memory = estimate_memory(program, variables);
  return e;
}

}  // namespace mtf::sim
