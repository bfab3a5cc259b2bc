// row_kernels.h — a composition computed along one dimension, run as one
// kernel where the layout leaves that dimension whole.
//
// softmax over bfloat16 is a composition of ops (max, subtract, exp, sum,
// reciprocal, multiply), so that any layout lowers it — a split softmax
// dimension costs an allreduce of the row statistics. Where nothing splits
// the dimension, its steps are local and run one after another over the same
// rows; fuse_softmax_rows() then puts one step in their place that runs
// ops::SoftmaxRows's kernel (the composition's bits in one pass over memory),
// reading the composition's input and writing its result's slot. It applies
// when every op of the composition is exactly one compute step (no
// collective, gather or split serves any of them), none of their
// intermediate values is read elsewhere or fetched, and the input is written
// once, before them.
#pragma once

#include "lowering/program.h"

namespace mtf {

// Rewrites `program` in place (and its lifetimes); returns the compositions
// replaced.
int fuse_softmax_rows(Program& program);

}  // namespace mtf
