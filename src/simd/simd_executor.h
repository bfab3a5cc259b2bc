// simd_executor.h — SimdMeshImpl's executor: processor `pnum` runs the whole
// SPMD program on its own slices, doing collectives through `transport`.
// Collectives over groups of one processor are skipped, so a one-processor
// program needs no transport. Errors are rethrown with the op named.
#pragma once

#include <vector>

#include "exec/step_hooks.h"
#include "kernels/kernel_context.h"
#include "lowering/program.h"
#include "mtf/transport.h"

namespace mtf {

// On return, (*fetched)[i] is this processor's slice of fetch i (empty in a
// dry run); new variable values are in state.pending_assignments (not yet
// committed).
void run_core(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* fetched, StepHooks* hooks = nullptr);

}  // namespace mtf
