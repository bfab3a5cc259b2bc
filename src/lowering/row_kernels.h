// row_kernels.h — compositions computed along one dimension, run as one
// kernel each where the layout leaves that dimension whole.
//
// bfloat16 softmax and layer norm's normalization, and their gradients, are
// compositions of ops (max or mean, subtract, exp or square, sum,
// reciprocal or rsqrt, multiply), so that any layout lowers them — a split
// dimension costs an allreduce of the row statistics. Each is also recorded
// as one op nothing reads (ops::RowKernel). Where nothing splits the
// dimension, a composition's steps are local and run one after another over
// the same rows; fuse_row_kernels() then puts one step in their place that
// runs the recorded op's kernel (the composition's bits in one pass over
// memory), reading the composition's inputs and writing its results' slots.
// It applies when every op of the composition is exactly one compute step
// (no collective, gather or split serves any of them), the intermediate
// values are read by the composition only (the results also after it, never
// fetched otherwise), and the inputs are written before it.
#pragma once

#include "lowering/program.h"

namespace mtf {

// Rewrites `program` in place (and its lifetimes); returns the compositions
// replaced.
int fuse_row_kernels(Program& program);

}  // namespace mtf
