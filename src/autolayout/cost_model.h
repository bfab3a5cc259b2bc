// cost_model.h — a fast estimate of a per-core program's step time on a
// simulated machine, for searching layouts: each compute step at its
// roofline time (as the engine times it), each collective by the step count
// of the algorithm the executors run (the allreduce algorithm chosen by
// collectives::choose_allreduce_algorithm, ring allgather) times the latency and
// bandwidth of its mesh axis's ring (or, for the doubling algorithms, of each
// round's partner exchanges routed over the machine), where a link that
// several exchanges of the axis cross at once (e.g. the two cores of a chip
// in rings along the same torus line) gives each its share. Steps do not overlap, as in the engine.
// The engine's simulation is the reference; this is its cheap stand-in.
// Internal.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lowering/program.h"
#include "mtf/sim.h"
#include "sim/memory.h"

namespace mtf::sim {

struct CostEstimate {
  double step_time = 0;  // seconds
  double compute = 0;    // of which compute steps
  double communication = 0;
  MemoryEstimate memory;
};

class CostModel {
 public:
  // The mesh's mapping onto the topology (automatic), and each mesh axis's
  // ring latency and seconds per byte.
  CostModel(const Topology& topo, const MeshShape& mesh);
  CostEstimate estimate(const Program& program,
                        const std::vector<std::pair<std::string, int64_t>>& variables) const;
  const Topology& topology() const { return topo_; }
  // Seconds of one collective along mesh axis `axis`.
  double allreduce_time(int axis, double bytes) const;
  double allgather_time(int axis, double block_bytes) const;
  // A halo exchange in which a processor sends at most bytes_sent (half to
  // each neighbour, at once).
  double halo_time(int axis, double bytes_sent) const;

 private:
  struct Exchange {
    double latency = 0;  // the slowest pair's route
    double seconds_per_byte = 0;
  };
  struct AxisCost : Exchange {  // a ring step: each member to its neighbour
    // partners[k]: every member exchanging with the member whose position
    // differs in bit k (recursive doubling's and halving-doubling's rounds),
    // routed over the machine: on a torus, far partners are fewer hops away
    // than their distance round the ring.
    std::vector<Exchange> partners;
  };
  Topology topo_;
  MeshShape mesh_;
  std::vector<AxisCost> axes_;
};

}  // namespace mtf::sim
