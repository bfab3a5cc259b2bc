// engine.h — runs one SPMD program on a simulated machine: one fiber per
// logical processor under the time-ordered scheduler, a SimTransport per
// processor, and step hooks that time compute steps by the roofline model.
// Produces a SimReport (and a Chrome trace when asked). Internal.
#pragma once

#include <functional>
#include <memory>
#include <set>

#include "lowering/program.h"
#include "mtf/sim.h"
#include "mtf/transport.h"
#include "sim/machine.h"
#include "sim/ring_timing.h"
#include "simd/simd_executor.h"

namespace mtf::sim {

class Engine {
 public:
  // Throws LayoutError when the mesh does not match the machine's core count,
  // ValueError for a bad topology or mapping.
  Engine(const SimOptions& options, const MeshShape& mesh);

  const CoreMapping& mapping() const { return mapping_; }
  const Machine& machine() const { return machine_; }

  // Runs core_main(transport, hooks) for every logical processor (hooks.dry()
  // in cost-only mode) and returns the report of the run. In cost-only mode
  // it may run core_main again on every core (see RingTimer), so core_main
  // must start each call afresh. Errors of a core
  // are rethrown (the root cause, not the peers' PeerLostErrors); a set of
  // cores all waiting on each other is an error naming them, not a hang.
  SimReport run(const Program& program,
                const std::function<void(Transport&, StepHooks&)>& core_main);

 private:
  SimOptions options_;
  MeshShape mesh_;
  Machine machine_;
  CoreMapping mapping_;
  // Rings that cost-only runs exchange message by message (RingTimer).
  std::set<RingKey> slow_rings_;
};

// Roofline time of a compute or split step on one core.
double step_compute_time(const Program& program, const Step& step, const Topology& topo);

// The time a halo step's copies take on one core of a host (host_cpus > 0;
// else 0), beside its messages: the windowed slice zeroed and filled with
// the rank's own rows and the rows received.
double halo_copy_time(const Program& program, const Step& step, const Topology& topo);

}  // namespace mtf::sim
