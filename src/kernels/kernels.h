// kernels.h — CPU kernels on host slices (HostTensor). Internal.
//
// Every kernel writes into an output the caller allocated with the output's
// slice shape; inputs are never modified. Dimensions are matched by name, so
// an input may hold its dimensions in any order. float32 and int32 are
// supported where noted; bfloat16 throws DTypeError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_plan.h"
#include "mtf/host_tensor.h"

namespace mtf::kernels {

enum class UnaryFn {
  kIdentity,
  kRelu,
  kGelu,
  kExp,
  kLog,
  kTanh,
  kSigmoid,
  kSqrt,
  kRsqrt,
  kSquare,
  kAbs,
  kNegative,
  kReciprocal,
  kSin,
  kCos,
  kSoftplus,
  kSign,
  kReluGrad,  // 1 where x > 0 else 0: relu'(x)
  kGeluGrad,  // gelu'(x)
};
const char* unary_name(UnaryFn fn);
// float32 for all; int32 for identity, negative, abs, square, sign, relu.
void unary(UnaryFn fn, const HostTensor& x, HostTensor& y);
// y[i] = fn(x[i]) for n floats (y may be x): the loop behind unary() and
// the fused kernel, so both give the same bits.
void unary_float(UnaryFn fn, const float* x, float* y, int64_t n);
void cast(const HostTensor& x, HostTensor& y);

enum class BinaryFn {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMin,
  kMax,
  kPow,
  kFloorDiv,  // floor(a / b), Python's and TensorFlow's floordiv
  kMod,       // a - floor(a / b) * b: the divisor's sign (Python's %, tf.math.floormod)
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kEqual,
  kNotEqual,
};
const char* binary_name(BinaryFn fn);
bool is_comparison(BinaryFn fn);
// out's dimensions contain a's and b's (broadcast by name). Arithmetic: out
// has a's dtype; comparisons: out is int32.
void binary(BinaryFn fn, const HostTensor& a, const HostTensor& b, HostTensor& out);
// out[i] = fn(a[i * sa], b[i * sb]) for n floats, fn arithmetic (not a
// comparison); out contiguous (it may be a or b where that stride is 1). The
// same loops as binary(), so both give the same bits.
void binary_float_row(BinaryFn fn, float* out, const float* a, int64_t sa, const float* b,
                      int64_t sb, int64_t n);
// out = a + alpha * b for float32, b broadcast by name into a's shape (= out's).
void scaled_add(const HostTensor& a, float alpha, const HostTensor& b, HostTensor& out);
void where(const HostTensor& cond, const HostTensor& x, const HostTensor& y, HostTensor& out);
// Copies x into out, whose dimensions contain x's (any order): transpose plus
// broadcast.
void broadcast_copy(const HostTensor& x, HostTensor& out);
void fill(HostTensor& out, float value);

enum class ReduceFn { kSum, kMax, kMin };
// out's dimensions are a subset of x's (any order).
// fixed_order: each element of a float sum adds its inputs one at a time in
// row-major order of x's dimensions, whatever the other dimensions' sizes.
// A bfloat16 x is read as it is and reduced in float32 into a float32 out,
// or a bfloat16 out rounded once: the bits of reducing a float32 copy.
void reduce(ReduceFn fn, const HostTensor& x, HostTensor& out, bool fixed_order = false);
// reduce()'s float32 loop on raw arrays, for kernels that produce x a piece
// at a time: x is walked over `sizes` with `x_strides`; out, with
// `out_strides` along the same axes (0 on reduced axes), accumulates into
// the values it holds (start it at reduce_identity). Pieces of x cut along an
// axis that out keeps are summed exactly as reduce() sums the whole.
void reduce_float_into(ReduceFn fn, const std::vector<int64_t>& sizes, const float* x,
                       const std::vector<int64_t>& x_strides, float* out,
                       const std::vector<int64_t>& out_strides, bool fixed_order);
float reduce_identity(ReduceFn fn);
// fn over the contiguous row x[0..n), with the bits reduce() gives each row
// of a tensor whose reduced dimension is its innermost.
float reduce_row(ReduceFn fn, const float* x, int64_t n, bool fixed_order);
// out = the sum over the dimensions out lacks of (f0 * f1 * f2)^2, the 1 to 3
// factors broadcast by name into the first's shape (out's are a subset of
// it; the first float32 or bfloat16, the others float32), in one pass:
// neither the product nor its square is stored.
// fixed_order: each output element adds its terms in row-major order, so a
// slice of the first factor sums each element as the whole would.
void sum_of_squares(const std::vector<const HostTensor*>& factors, HostTensor& out,
                    bool fixed_order = false);
// y = softmax over the innermost dimension of bfloat16 x, in one pass over
// memory, with the bits of softmax's bfloat16 composition run op by op
// (ops/reduce_ops.cc): max, x - max, exp (each stored bfloat16), the float32
// sum in reduce()'s order (fixed_order as reduce() takes it), its
// reciprocal rounded to bfloat16, the product rounded. Rows are split over
// kernel_threads() OpenMP threads (the bits do not depend on them).
void softmax_rows_bfloat16(const HostTensor& x, HostTensor& y, bool fixed_order);
// dx = softmax's gradient for dy, given its result y (the bfloat16
// composition y * (dy - sum(dy * y)), the sum in float32), in one pass with
// that composition's bits; dy, y and dx of one shape.
void softmax_gradient_rows_bfloat16(const HostTensor& dy, const HostTensor& y, HostTensor& dx,
                                    bool fixed_order);
// Rows over the innermost dimension of bfloat16 x normalized: z = (x -
// mean) * r, r = rsqrt(variance + epsilon) per row (r has x's shape less
// that dimension), in one pass with the bits of the composition in
// ops/normalize_rows.cc (moments in float32 in reduce()'s order, fixed_order
// as reduce() takes it; each elementwise step rounded to bfloat16).
void layer_norm_rows_bfloat16(const HostTensor& x, HostTensor& z, HostTensor& r, float epsilon,
                              bool fixed_order);
// dx = the gradient of that normalization for dz, given z and r: r * (dz -
// mean(dz) - z * mean(dz * z)), with the bits of its composition.
void layer_norm_gradient_rows_bfloat16(const HostTensor& dz, const HostTensor& z,
                                       const HostTensor& r, HostTensor& dx, bool fixed_order);
// "reduce_sum", "reduce_max", "reduce_min".
const char* reduce_name(ReduceFn fn);
// acc = fn(acc, x) elementwise; x and acc have one shape.
void combine(ReduceFn fn, const HostTensor& x, HostTensor& acc);

// Generalised contraction; out's dimensions come from the inputs. float32
// contractions run on OpenBLAS sgemm.
// fixed_order: float32 products through sgemm_fixed_order (each element
// summed in index order, the same bits for any slicing) instead of BLAS.
void einsum(const std::vector<const HostTensor*>& inputs, HostTensor& out,
            bool fixed_order = false);
// The same in two halves: every decision that depends on shapes only (which
// dimensions fold into M, N, K and batch, which operand is read in place
// through which transpose flag and leading dimension, which is permuted, the
// batch loop) made once for these slice shapes; then runs on tensors of
// exactly those shapes, with the same bits as the one-call form.
std::shared_ptr<const KernelPlan> plan_einsum(const std::vector<Shape>& inputs, const Shape& out,
                                              DType dtype, bool fixed_order);
void einsum(const KernelPlan& plan, const std::vector<const HostTensor*>& inputs, HostTensor& out);
// The matrix products an einsum plan runs through BLAS: `batch` products of
// [m, k] x [k, n] each. Empty for other plans, for fixed-order plans and for
// contractions that need no BLAS (dot products, broadcast products). For
// cost models.
struct GemmCall {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};
std::vector<GemmCall> einsum_gemm_calls(const KernelPlan& plan);
// True for an einsum plan (not fixed-order) none of whose steps calls BLAS:
// a product broadcast elementwise, bound by its bytes. For cost models.
bool einsum_without_gemm(const KernelPlan& plan);
// acc += alpha * einsum(inputs), for a float32 plan made without fixed order
// and out = acc's shape: a product sgemm reads and writes in place runs as one
// sgemm with beta = 1 (no separate result), anything else through a scratch
// result. What an optimizer's update of a variable by a contraction needs.
void einsum_accumulate(const KernelPlan& plan, const std::vector<const HostTensor*>& inputs,
                       float alpha, HostTensor& acc);

// Running sum or product along `axis` (exclusive: element i combines
// elements before i, element 0 is the identity; reverse: from the end),
// combined one element at a time in order. float32 and int32.
enum class ScanFn { kSum, kProd };
void scan(ScanFn fn, const HostTensor& x, int axis, bool exclusive, bool reverse, HostTensor& out);
// The gradient of scan(kProd, x, ...) for output gradient g, without
// dividing by x (zeros are fine). float32.
void cumprod_grad(const HostTensor& x, const HostTensor& g, int axis, bool exclusive, bool reverse,
                  HostTensor& out);

// Along one axis; x and out have the same dimensions in the same order.
void slice(const HostTensor& x, int axis, int64_t begin, HostTensor& out);
void pad(const HostTensor& x, int axis, int64_t before, HostTensor& out);
void concat(const std::vector<const HostTensor*>& xs, int axis, HostTensor& out);
void shift(const HostTensor& x, int axis, int64_t offset, bool wrap, HostTensor& out);

// The block of `full` at `begin` with `shape` (same dimension order): shares
// full's buffer when the block is all of it, else a copy.
HostTensor block_of(const HostTensor& full, const std::vector<int64_t>& begin, const Shape& shape);
// Copies `block` into `full` at `begin`.
void insert_block(HostTensor& full, const std::vector<int64_t>& begin, const HostTensor& block);

// out = indices.shape + [depth]; `offset` is the first position held by this
// slice of the one-hot dimension.
void one_hot(const HostTensor& indices, int64_t offset, float on, float off, HostTensor& out);
// out[i] = start + i along its only dimension.
void range(int64_t start, HostTensor& out);
// out = indices dims + weights dims without weights' `axis` and without the
// dimensions indices share with weights (for those, each index picks from
// its own part of weights: a batched gather).
// Rows of `weights` along `axis` picked by indices - index_offset (the
// offset of this slice of weights along axis); indices outside the slice
// give zeros, so the slices' results sum to the whole gather.
void gather(const HostTensor& weights, int axis, const HostTensor& indices, int64_t index_offset,
            HostTensor& out);
// values/indices have x's dims with `axis` resized to k.
void top_k(const HostTensor& x, int axis, HostTensor& values, HostTensor& indices);

// Counter-based random numbers: element e of the logical tensor `full` gets
// philox(key = seed, counter = (logical index of e, run)). `offset` is the
// slice's offset within `full` (zeros for an unsplit tensor).
void random_uniform(uint64_t seed, uint64_t run, const Shape& full,
                    const std::vector<int64_t>& offset, float lo, float hi, HostTensor& out);
void random_normal(uint64_t seed, uint64_t run, const Shape& full,
                   const std::vector<int64_t>& offset, float mean, float stddev, bool truncated,
                   HostTensor& out);

// Throws DTypeError unless t is float32 (or int32 when allow_int).
void require_supported(const HostTensor& t, bool allow_int, const char* kernel);

}  // namespace mtf::kernels
