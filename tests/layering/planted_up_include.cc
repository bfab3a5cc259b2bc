// A planted violation for the layering test (never compiled): the layering
// check is run with this file counted as part of the kernels layer, where
// including the simulator, three layers up, must fail the check.
#include "kernels/kernels.h"
#include "sim/engine.h"
