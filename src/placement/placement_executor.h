// placement_executor.h — PlacementMeshImpl's executor: one controller runs
// every step for every device in turn and does the collectives in memory,
// combining each group's members in group order. Same program and kernels as
// the SIMD executor.
#pragma once

#include <vector>

#include "exec/step_hooks.h"
#include "kernels/kernel_context.h"
#include "lowering/program.h"

namespace mtf {

// states[p] and (*fetched)[p] for every device p of program.mesh. `hooks`
// sees each step once (run for every device).
void run_placement(const Program& program, std::vector<RunState>& states,
                   std::vector<std::vector<HostTensor>>* fetched, StepHooks* hooks = nullptr);

}  // namespace mtf
