// fusion.h — fewer passes over memory: chains of elementwise compute steps
// of a lowered program become single fused steps.
//
// fuse_elementwise() groups float32 unary maps and arithmetic binary ops
// (ops::as_fused_instr) whose outputs have one slice shape, where one
// consumes another's output, into one step at the position of the group's
// last member that runs kernels::fused_elementwise. A group stays legal:
// nothing outside it reads a member's output before the fused step runs, and
// nothing writes a member's input in between. Values read after the group
// (by other steps or as fetches) remain outputs; the rest never reach memory.
// A float32 reduction of a group member's output that keeps that output's
// first axis ends the group as the fused step's epilogue (its output is the
// step's last), so the reduced values never reach memory either; a group
// with an epilogue takes no more members. A lone elementwise op keeps its
// own kernel unless a reduction follows it. Every fused step names donors:
// inputs of an output's exact slice shape that die at that step, whose
// buffers the output takes over instead of allocating.
//
// The fused kernel computes every element with the unfused kernels' loops,
// so fusion changes no bits: whatever a layout's collectives cut out of a
// chain, results stay those of one processor in reproducible mode.
#pragma once

#include "lowering/program.h"

namespace mtf {

struct FusionStats {
  int fused_steps = 0;    // fused steps of two or more ops
  int removed_steps = 0;  // compute steps folded into them
};

// Rewrites `program` in place (and its lifetimes).
FusionStats fuse_elementwise(Program& program);

// An optimizer's update by a contraction, var <- var + alpha * einsum(...)
// (SGD's and momentum's assign_sub of a weight gradient), becomes one step
// that adds the contraction straight into the variable's next value (sgemm
// with beta = 1), when the einsum's result is read by nothing else, is not
// changed in between (a gradient allreduced over a mesh axis is not fused),
// and has the variable's slice shape in its order. Float rounding differs
// from the two steps (alpha scales inside the product), so only for fast
// mode: Session skips it in reproducible mode. Returns the steps fused.
int fuse_updates(Program& program);

}  // namespace mtf
