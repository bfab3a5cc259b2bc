// fused_elementwise.h — one pass over memory for a chain of float32 (or
// bfloat16, computed in float32) elementwise ops (unary maps and broadcast-by-name arithmetic).
//
// A FusedExpr is a little straight-line program: each instruction loads an
// external input or applies a unary or binary function to earlier
// instructions' values; some instructions are stored as outputs. The kernel
// walks the outputs' common shape in rows (one strided loop nest for every
// operand) and evaluates the program on blocks of a row that stay in the L1
// cache, so intermediates never travel to memory. Each instruction runs the
// very loop of the unfused kernel (unary_float / binary_float_row), element
// by element, so a fused result has exactly the bits of the ops run one by
// one — fusion never changes numbers, whatever the layout groups.
//
// Outputs are written after every instruction of a block has read its
// inputs, so an output may share its buffer with an input of its exact shape
// (same dimensions in the same order): the lowering lets an output take over
// an input that dies at this step.
//
// A reduction epilogue (reduce_of >= 0) reduces one instruction's values
// over `reduce_space` (the iteration space then) into one more output, the
// last, whose dimensions are a subset of the space that keeps its first: the
// kernel evaluates the program on pieces of the space cut along that first
// axis, small enough to stay in cache, and reduces each piece with
// reduce()'s own loop, so the sum has reduce()'s bits (fixed order too) while
// the reduced values never travel to memory.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace mtf::kernels {

struct FusedInstr {
  enum class Kind { kInput, kUnary, kBinary };
  Kind kind = Kind::kInput;
  int input = -1;  // kInput: which external input
  UnaryFn unary = UnaryFn::kIdentity;
  BinaryFn binary = BinaryFn::kAdd;
  int a = -1, b = -1;  // operands: indices of earlier instructions
  // The op stores bfloat16: its values are rounded to bfloat16 (to nearest
  // even) after it runs, as the unfused op's output would be.
  bool round_bfloat16 = false;
};

struct FusedExpr {
  int num_inputs = 0;
  std::vector<FusedInstr> instrs;
  std::vector<int> outputs;  // the instruction stored as each output
  int reduce_of = -1;        // the instruction reduced into the last output
  ReduceFn reduce_fn = ReduceFn::kSum;
  Shape reduce_space;  // with reduce_of: the iteration space
  // "multiply, add, square": the functions in program order.
  std::string describe() const;
};

// Most operands (inputs + outputs, a reduction epilogue counting as one) a
// fused step may have.
constexpr int kMaxFusedOperands = 16;

// Runs `e`. Every output has one shape (the iteration space), but for a
// reduction epilogue's; every input's dimensions are a subset of it, in any
// order (broadcast by name). Inputs and outputs are float32 or bfloat16
// (read as float32 a block at a time; the reduction epilogue's output is
// float32). fixed_order: the epilogue sums as
// reduce(..., fixed_order) does. REQUIRES: inputs + outputs <=
// kMaxFusedOperands.
// max_threads > 1: parts of the space run on that many OpenMP threads at
// most (the bits do not depend on it).
void fused_elementwise(const FusedExpr& e, const std::vector<const HostTensor*>& inputs,
                       const std::vector<HostTensor*>& outputs, bool fixed_order = false,
                       int max_threads = 1);

}  // namespace mtf::kernels
