// op_util.h — shape checks and small builders shared by the op families.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/fused_elementwise.h"
#include "mtf/errors.h"
#include "mtf/ops.h"

namespace mtf::ops {

// Throws ShapeError when two inputs use one dimension name with two sizes.
void check_consistent_sizes(const std::string& op, const std::vector<Tensor>& inputs);
// Throws DTypeError unless every input has the first one's dtype.
void check_same_dtype(const std::string& op, const std::vector<Tensor>& inputs);
// Throws DTypeError unless x is float32 or bfloat16.
void require_float(const std::string& op, const Tensor& x);
// DTypeError when x is bool (arithmetic, reductions and contractions take
// numbers: the message says how to cast).
void reject_bool(const std::string& op, const Tensor& x);
// Mesh TensorFlow's broadcast rule for binary ops (see mtf/ops.h).
Shape broadcast_shape(const Shape& a, const Shape& b);
// A scalar constant with x's mesh and dtype.
Tensor scalar_like(const Tensor& x, float value);
// t summed (and transposed) down to `shape`, whose dims t must contain.
Tensor reduce_to(const Tensor& t, const Shape& shape);
// Index of dimension `name` in x, or a ShapeError naming op and tensor.
int axis_of(const std::string& op, const Tensor& x, const std::string& name);
// x's dimension that d names (ShapeError naming op and x when it has none,
// or a Dimension's size differs).
Dimension dim_of(const std::string& op, const Tensor& x, const DimRef& d);
// The OriginScope of composition `call` applied to x (`softmax on "x:0"`):
// the ops it makes name it in error messages.
OriginScope made_by(const std::string& call, const Tensor& x);
// The seed a random op draws with, or 0 for any other op.
uint64_t random_seed_of(const Operation& op);

// For the lowering's fusion pass: when `op` is a float32 unary map (not
// identity) or float32 arithmetic binary op, sets instr's kind and function
// (operands left to the caller: input order is the op's) and returns true.
bool as_fused_instr(const Operation& op, kernels::FusedInstr* instr);
// A composition along an innermost dimension recorded as one op
// (ops/row_kernel_ops.cc) for the lowering's rows pass: `composition` its
// ops, `results` those whose values are read after it (the op's outputs, in
// order).
struct RowKernel {
  std::vector<const Operation*> results;
  std::vector<const Operation*> composition;
};
// When `op` is such an op (it reads the composition's inputs and nothing
// reads it), sets info and returns true.
bool as_row_kernel(const Operation& op, RowKernel* info);
// Record these bfloat16 compositions over `dim` as such ops, when dim is the
// innermost dimension of every tensor involved that has it (the others hold
// a value per row) and all are bfloat16; otherwise nothing:
// y = softmax(xs); dx = its gradient for dy, with out = softmax's result;
// z, r = the normalization of xs (normalize_rows); dx = its gradient for dz.
void record_softmax_rows(const Tensor& xs, const Tensor& y, const Dimension& dim);
void record_softmax_gradient_rows(const Tensor& dy, const Tensor& out, const Tensor& dx,
                                  const Dimension& dim);
void record_normalize_rows(const Tensor& xs, const Tensor& z, const Tensor& r, const Dimension& dim,
                           float epsilon);
void record_normalize_gradient_rows(const Tensor& dz, const Tensor& z, const Tensor& r,
                                    const Tensor& dx, const Dimension& dim);
// bfloat16 x's rows over `dim` normalized, layer norm's core: (x - mean) *
// rsqrt(variance + epsilon), the moments in float32, the result bfloat16;
// its gradient written by hand (it reads the result and the per-row factor
// only), and both recorded for the rows pass.
Tensor normalize_rows(const Tensor& x, const Dimension& dim, float epsilon);
// When `op` is a float32 reduce_sum/max/min, sets fn and returns true.
bool as_reduction(const Operation& op, kernels::ReduceFn* fn);
// When `op` is an assignment var <- var + alpha * value (assign_add /
// assign_sub on float32, value of var's shape), sets alpha and returns true.
bool as_scaled_update(const Operation& op, float* alpha);
// `value` (computed from stop_gradient(x)) with the gradient grad(dy) with
// respect to x: a gradient written by hand, so that the backward pass keeps
// only the tensors grad reads.
using GradientFn = std::function<Tensor(const Tensor& dy)>;
Tensor with_gradient(const Tensor& x, const Tensor& value, GradientFn grad);

// True for einsum ops.
bool is_einsum(const Operation& op);
// The kernel plan of `op` for these slice shapes, or null for ops whose
// kernels do not plan (today: einsum plans; the rest decide per call).
std::shared_ptr<const kernels::KernelPlan> plan_kernel(const Operation& op,
                                                       const std::vector<Shape>& input_slices,
                                                       const std::vector<Shape>& output_slices,
                                                       bool reproducible);

// A statistic of bfloat16 values formed in float32 (sums, exponentials,
// moments, the loss) and rounded once at the end, as Mesh TensorFlow keeps
// softmax and norm statistics in float32: f(x), through float32 when x is
// bfloat16.
template <typename F>
Tensor in_float32(const Tensor& x, F f) {
  if (x.dtype() != bfloat16) return f(x);
  return cast(f(cast(x, float32)), bfloat16);
}

}  // namespace mtf::ops
