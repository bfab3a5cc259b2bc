// executor.h — runs a Program.
//
// run_core: processor `pnum` runs the whole program on its own slices, doing
// collectives through `transport` (SPMD; SimdMeshImpl and the single
// processor). Collectives over groups of one processor are skipped, so a
// one-processor program needs no transport.
// run_placement: one controller runs every step for every device in turn,
// doing collectives in memory across the devices' slices
// (PlacementMeshImpl). Both use the same kernels and the same program.
// Errors raised by a step are rethrown with the op named.
#pragma once

#include <vector>

#include "exec/kernel_context.h"
#include "exec/program.h"
#include "mtf/transport.h"

namespace mtf {

// On return, (*fetched)[i] is this processor's slice of fetch i; new
// variable values are in state.pending_assignments (not yet committed).
void run_core(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* fetched);

// states[p] and (*fetched)[p] for every device p of program.mesh.
void run_placement(const Program& program, std::vector<RunState>& states,
                   std::vector<std::vector<HostTensor>>* fetched);

}  // namespace mtf
