// kernel_plans.h — kernels' shape decisions made once per program: every
// compute step whose op's kernel plans (ops::plan_kernel; today einsum) gets
// the plan for its slice shapes, which every processor shares (slices of
// one tensor have one shape) and every run reuses.
#pragma once

#include "lowering/program.h"

namespace mtf {

// reproducible: MeshConfig::reproducible (the kernels' fixed-order mode).
// Returns the number of steps planned.
int plan_kernels(Program& program, bool reproducible);

}  // namespace mtf
