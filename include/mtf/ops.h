// mtf/ops.h — operations on named-dimension tensors, following the semantics
// of Mesh TensorFlow's ops.py. Every function adds ops to the graph of its
// inputs and returns their outputs; `name` (optional) names the op.
//
// Broadcasting is by dimension name: a binary op's output has the first
// operand's dimensions followed by the second's that the first lacks (or the
// larger operand's shape when one contains the other), unless output_shape is
// given. Comparisons yield bool tensors; bools take no arithmetic (cast
// them), only equal / not_equal, minimum / maximum (and / or), the logical
// ops, where and movement; `where` also takes a number as its condition
// (nonzero is true).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mtf/graph.h"
#include "mtf/host_tensor.h"

namespace mtf {

// ---- creation -------------------------------------------------------------
// A tensor of `shape` filled with `value`.
Tensor constant(const Mesh& mesh, float value, const Shape& shape = Shape(), DType dtype = float32,
                const std::string& name = "");
Tensor zeros(const Mesh& mesh, const Shape& shape, DType dtype = float32);
Tensor ones(const Mesh& mesh, const Shape& shape, DType dtype = float32);
// Zeros / ones of x's shape and dtype.
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
// A constant holding a copy of host data.
Tensor import_host(const Mesh& mesh, const HostTensor& value, const std::string& name = "");
// A value fed at each Session::run (host data imported per step).
Tensor placeholder(const Mesh& mesh, const Shape& shape, DType dtype = float32,
                   const std::string& name = "placeholder");
// Export to host: fetch a tensor with Session::run.

// ---- elementwise unary ----------------------------------------------------
Tensor relu(const Tensor& x, const std::string& name = "");
// Tanh approximation, as Mesh TensorFlow's gelu.
Tensor gelu(const Tensor& x, const std::string& name = "");
Tensor exp(const Tensor& x, const std::string& name = "");
Tensor log(const Tensor& x, const std::string& name = "");
Tensor tanh(const Tensor& x, const std::string& name = "");
Tensor sigmoid(const Tensor& x, const std::string& name = "");
Tensor sqrt(const Tensor& x, const std::string& name = "");
Tensor rsqrt(const Tensor& x, const std::string& name = "");
Tensor square(const Tensor& x, const std::string& name = "");
Tensor abs(const Tensor& x, const std::string& name = "");
Tensor negative(const Tensor& x, const std::string& name = "");
Tensor reciprocal(const Tensor& x, const std::string& name = "");
Tensor sin(const Tensor& x, const std::string& name = "");
Tensor cos(const Tensor& x, const std::string& name = "");
Tensor softplus(const Tensor& x, const std::string& name = "");
Tensor sign(const Tensor& x, const std::string& name = "");
// Mesh TensorFlow's activations, composed of the ops here (so their
// gradients and every layout come with them): swish x * sigmoid(x); elu x
// above 0, exp(x) - 1 below; selu 1.0507... * (x above 0, 1.6733... *
// (exp(x) - 1) below); leaky_relu max(x, alpha * x) for 0 <= alpha <= 1.
Tensor swish(const Tensor& x, const std::string& name = "");
Tensor elu(const Tensor& x, const std::string& name = "");
Tensor selu(const Tensor& x, const std::string& name = "");
Tensor leaky_relu(const Tensor& x, float alpha = 0.2f, const std::string& name = "");
Tensor cast(const Tensor& x, DType dtype, const std::string& name = "");
Tensor identity(const Tensor& x, const std::string& name = "");
// Identity forward; no gradient flows through it.
Tensor stop_gradient(const Tensor& x, const std::string& name = "");

// ---- elementwise binary (broadcast by name) -------------------------------
Tensor add(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor subtract(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor multiply(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor divide(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor minimum(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor maximum(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor pow(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
// floor(a / b) and a - floor(a / b) * b (the remainder takes b's sign), as
// Python's // and % and Mesh TensorFlow's floordiv and mod; float32 or
// int32 (an int32 divisor of 0 is a ValueError). No gradient flows through
// floordiv; mod's is (dy, -dy * floordiv(a, b)).
Tensor floordiv(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor mod(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
// Mesh TensorFlow's logical ops: bool results; a bool input as it is, a
// number true where it is nonzero (NaN included).
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
// cond ? x : y, broadcast over all three; cond is bool (or a number: nonzero
// is true).
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
// Sum of tensors (broadcast by name).
Tensor add_n(const std::vector<Tensor>& xs);
// x broadcast (and transposed) to `shape`, which must contain x's dimensions.
Tensor broadcast(const Tensor& x, const Shape& shape);

// The same with a scalar operand, in the tensor's dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(float a, const Tensor& b);

// ---- einsum ---------------------------------------------------------------
// Generalised contraction by dimension name: every dimension of the inputs
// absent from output_shape is summed. Dimensions of one name must agree in
// size; every output dimension must appear in some input.
Tensor einsum(const std::vector<Tensor>& inputs, const Shape& output_shape,
              const std::string& name = "");
// Output = the dimensions that appear in exactly one input, in order.
Tensor einsum(const std::vector<Tensor>& inputs, const std::string& name = "");
// einsum of two tensors; output defaults to dimensions not shared by both.
Tensor matmul(const Tensor& a, const Tensor& b, const Shape* output_shape = nullptr);

// ---- reductions -----------------------------------------------------------
// What a reduction keeps: an output shape (a subset of x's dimensions, any
// order — a Shape, {dims...}, a string with ':' such as "b:4;c:2", or ""
// for a scalar), or the one dimension it removes (a Dimension, or its name:
// a string without ':'). Strings never change meaning: a shape string
// always has a ':' per dimension.
class ReduceSpec {
 public:
  ReduceSpec(const Shape& output_shape) : shape_(output_shape) {}  // NOLINT(runtime/explicit)
  ReduceSpec(std::initializer_list<Dimension> dims) : shape_(Shape(dims)) {}  // NOLINT
  ReduceSpec(const Dimension& reduced) : dim_(reduced) {}  // NOLINT(runtime/explicit)
  ReduceSpec(const DimRef& reduced) : dim_(reduced) {}     // NOLINT(runtime/explicit)
  ReduceSpec(const std::string& shape_or_name);            // NOLINT(runtime/explicit)
  ReduceSpec(const char* shape_or_name) : ReduceSpec(std::string(shape_or_name)) {}  // NOLINT
  // The output shape for input x (ShapeError naming op and x when a named
  // dimension is not x's).
  Shape output_for(const char* op, const Tensor& x) const;

 private:
  std::optional<Shape> shape_;
  std::optional<DimRef> dim_;
};

// An empty set of reduced dimensions is identity; a reduction over a size-0
// dimension gives 0 (sum), -inf (max), +inf (min). Without a spec: to a
// scalar.
Tensor reduce_sum(const Tensor& x, const ReduceSpec& spec);
Tensor reduce_sum(const Tensor& x);
Tensor reduce_mean(const Tensor& x, const ReduceSpec& spec);
Tensor reduce_mean(const Tensor& x);
Tensor reduce_max(const Tensor& x, const ReduceSpec& spec);
Tensor reduce_max(const Tensor& x);
Tensor reduce_min(const Tensor& x, const ReduceSpec& spec);
Tensor reduce_min(const Tensor& x);
Tensor reduce_logsumexp(const Tensor& x, const ReduceSpec& spec);
// Mesh TensorFlow's reduce_all / reduce_any: true where every / some input
// over the reduced dimensions is true (bool; a number is true where nonzero);
// min / max reductions, so a split reduced dimension costs one allreduce.
Tensor reduce_all(const Tensor& x, const ReduceSpec& spec);
Tensor reduce_any(const Tensor& x, const ReduceSpec& spec);
// sqrt(sum of the squares of every element of every tensor), a float32
// scalar (invalid tensors are skipped): the global norm gradient clipping
// uses. The tensors may lie in any layouts; it costs one allreduce of a
// scalar across the mesh axes that split them (none when all are
// replicated). Not differentiable.
Tensor global_norm(const std::vector<Tensor>& tensors);
// The sum, over the dimensions of factors[0] that output_shape lacks, of
// (factors[0] * factors[1] * ...)^2 — one to three factors, the first
// float32 or bfloat16 and the others float32 with dimensions a subset of the
// first's (broadcast by name) — in one
// pass over the first: neither the product nor its square is stored (an
// optimizer's statistics of a gradient). A float32 tensor of output_shape
// (a subset of the first factor's dimensions); a split reduced dimension
// costs one allreduce of it. Not differentiable.
Tensor reduce_sum_of_squares(const std::vector<Tensor>& factors, const Shape& output_shape);
// softmax of bfloat16 x: exp(x - max) in bfloat16, its sum in float32, the
// product rounded to bfloat16 (Mesh TensorFlow's order; what the backward
// pass keeps is bfloat16). log_softmax and logsumexp of bfloat16 compute in
// float32 and round their result.
Tensor softmax(const Tensor& x, const DimRef& reduced_dim);
Tensor log_softmax(const Tensor& x, const DimRef& reduced_dim);
// Mesh TensorFlow's extra_logit: the normalization also counts one more
// logit of value `extra_logit` (a scalar or a tensor of x's shape without
// reduced_dim), as if a column of it were appended along reduced_dim —
// attention that may attend to nothing. No gradient flows into extra_logit.
Tensor reduce_logsumexp(const Tensor& x, const DimRef& reduced_dim, const Tensor& extra_logit);
Tensor log_softmax(const Tensor& x, const DimRef& reduced_dim, const Tensor& extra_logit);
Tensor softmax(const Tensor& x, const DimRef& reduced_dim, const Tensor& extra_logit);
// Mesh TensorFlow's top_1: (index, value) of the largest element along
// reduced_dim, both without it; where the largest value repeats, the last
// index (its definition: the max of the positions holding the max). The
// index in `dtype` (int32 or float32).
std::pair<Tensor, Tensor> top_1(const Tensor& x, const DimRef& reduced_dim, DType dtype = int32);
// An index along dim drawn with probabilities softmax(logits / temperature)
// (Gumbel-max: argmax of logits + temperature * Gumbel noise, counter-based
// so every layout draws the same); temperature 0 is top_1's index.
Tensor sample_with_temperature(const Tensor& logits, const DimRef& dim, float temperature = 1.0f,
                               uint64_t seed = 0);
// The first element (index 0) along every dimension of x not in output_shape.
Tensor reduce_first(const Tensor& x, const Shape& output_shape);
// The k largest values along reduced_dim, which k_dim replaces (k = its size):
// (values, int32 indices into reduced_dim), in decreasing order; ties keep
// the lower index first.
std::pair<Tensor, Tensor> top_k(const Tensor& x, const DimRef& reduced_dim, const Dimension& k_dim);
// The n-th largest (smallest) value along reduced_dim, n counted from 0 (so
// n = 0 is the max): x without reduced_dim. Mesh TensorFlow's
// nth_largest_element / nth_smallest_element. ValueError unless
// 0 <= n < reduced_dim's size.
Tensor nth_largest_element(const Tensor& x, int64_t n, const DimRef& reduced_dim);
Tensor nth_smallest_element(const Tensor& x, int64_t n, const DimRef& reduced_dim);
// 1 where x is nonzero, else 0, as `dtype` (Mesh TensorFlow's
// weights_nonzero: the mask of real tokens in padded targets).
Tensor weights_nonzero(const Tensor& x, DType dtype = float32);

// ---- layout of a tensor ---------------------------------------------------
// Same elements in row-major order under a new shape of equal element count.
Tensor reshape(const Tensor& x, const Shape& new_shape, const std::string& name = "");
// Mesh TensorFlow's replace_dimensions: `shape` with the consecutive
// dimensions old_dims replaced by new_dims (ShapeError when old_dims are
// not a run of shape's dimensions, in order); on a tensor, the reshape to it.
Shape replace_dimensions(const Shape& shape, const std::vector<Dimension>& old_dims,
                         const std::vector<Dimension>& new_dims);
Tensor replace_dimensions(const Tensor& x, const std::vector<Dimension>& old_dims,
                          const std::vector<Dimension>& new_dims);
Tensor rename_dimension(const Tensor& x, const DimRef& old_dim, const std::string& new_name);
// Reorders dimensions; new_shape has exactly x's dimensions.
Tensor transpose(const Tensor& x, const Shape& new_shape, const std::string& name = "");
// Elements [begin, begin+size) of dimension dim_name; the dimension keeps its name.
Tensor slice(const Tensor& x, int64_t begin, int64_t size, const DimRef& dim);
// Zero padding of `before` and `after` elements on dimension dim_name.
Tensor pad(const Tensor& x, int64_t before, int64_t after, const DimRef& dim);
// Concatenation along dim_name, which every input has (sizes may differ).
Tensor concat(const std::vector<Tensor>& xs, const DimRef& dim);
// Pieces of x along split_dim of the given sizes (summing to its size).
std::vector<Tensor> split(const Tensor& x, const DimRef& split_dim,
                          const std::vector<int64_t>& sizes);
// `num_splits` equal pieces (ValueError unless they divide the dimension).
std::vector<Tensor> split(const Tensor& x, const DimRef& split_dim, int num_splits);
// A new dimension of size xs.size() named dim_name, inserted at `axis`.
Tensor stack(const std::vector<Tensor>& xs, const std::string& dim_name, int axis);
// The slices of x along dim, each without that dimension.
std::vector<Tensor> unstack(const Tensor& x, const DimRef& dim);
// Shifts along dim by offset (positive moves elements to higher indices);
// vacated positions are zero, or wrap around when wrap is true.
Tensor shift(const Tensor& x, int64_t offset, const DimRef& dim, bool wrap);
// Mesh TensorFlow's halo_exchange: x holds blocks along blocks_dim, each
// block_size_dim long; every block gets the halo_size positions that precede
// it (from the blocks before it) and that follow it, concatenated along
// block_size_dim, which grows by 2 * halo_size (zeros past the ends, or
// wrapped around). left_halo_exchange: only those that precede it (grows by
// halo_size), as causal local attention needs. ValueError for halo_size < 0
// or one dimension given twice.
Tensor halo_exchange(const Tensor& x, const DimRef& blocks_dim, const DimRef& block_size_dim,
                     int64_t halo_size, bool wrap = false);
Tensor left_halo_exchange(const Tensor& x, const DimRef& blocks_dim, const DimRef& block_size_dim,
                          int64_t halo_size, bool wrap = false);
// Mesh TensorFlow's dynamic_shift: shift by an int32 offset that varies
// over offset's dimensions (a subset of x's, not dim): out[..., j, ...] =
// x[..., j - offset, ...], zeros shifted in (or wrapped around). A product
// with a one-hot permutation over dim, as Mesh TensorFlow lowers it: any
// layout, its gradient by the same product.
Tensor dynamic_shift(const Tensor& x, const Tensor& offset, const DimRef& dim, bool wrap);

// ---- running sums and products --------------------------------------------
// Along dim: out[i] = x[0] + ... + x[i]; exclusive:
// x[0] + ... + x[i-1] (out[0] = 0); reverse: from the last index down
// (out[i] = x[i] + ... + x[n-1]). float32 and int32; float32 has gradients.
// A dim split over the mesh is gathered first (the sum runs in index order,
// so every layout gives the same bits).
Tensor cumsum(const Tensor& x, const DimRef& dim, bool exclusive = false, bool reverse = false);
// The same with products (exclusive: out[0] = 1). Its gradient divides by
// nothing, so zeros in x are fine.
Tensor cumprod(const Tensor& x, const DimRef& dim, bool exclusive = false, bool reverse = false);

// ---- convolutions and pooling ---------------------------------------------
// Channels last, as in Mesh TensorFlow: x is [batch..., spatial..., channels]
// (any number of batch dimensions, N = 1 to 3 spatial ones, the channels
// last) and a filter is [filter spatial..., in_channels, out_channels], N =
// filter rank - 2. The result is [batch..., spatial..., out_channels]: the
// spatial dimensions keep their names with new sizes, so a layout that
// splits one splits the result alike, and the lowering then brings each
// processor only the neighbouring rows its windows read (a halo exchange)
// instead of gathering the dimension. Output position o reads input
// positions o * stride + j * dilation - pad_before (cross-correlation, as
// TensorFlow). padding "SAME": out = ceil(in / stride), zeros around as
// TensorFlow puts them (the odd one after); "VALID": no padding, out =
// ceil((in - (k - 1) * dilation) / stride). strides and dilations: one per
// spatial dimension, or empty for all 1. float32, with gradients.
Tensor conv(const Tensor& x, const Tensor& filter, const std::vector<int64_t>& strides = {},
            const std::string& padding = "SAME", const std::vector<int64_t>& dilations = {},
            const std::string& name = "");
// Transposed convolution (upsampling), the gradient of conv with respect to
// its input: x is [batch..., spatial..., in_channels] and the filter
// [filter spatial..., out_channels, in_channels] (TensorFlow's order); the
// result's spatial sizes are in * stride (SAME) or in * stride +
// max((k - 1) * dilation + 1 - stride, 0) (VALID).
Tensor conv_transpose(const Tensor& x, const Tensor& filter,
                      const std::vector<int64_t>& strides = {}, const std::string& padding = "SAME",
                      const std::vector<int64_t>& dilations = {}, const std::string& name = "");
// Max / average over windows of ksize (one per spatial dimension: the
// ksize.size() dimensions before the last of x), per channel; strides
// default to ksize. Padded positions are left out (average: the mean of the
// window's positions inside x).
Tensor max_pool(const Tensor& x, const std::vector<int64_t>& ksize,
                const std::vector<int64_t>& strides = {}, const std::string& padding = "VALID",
                const std::string& name = "");
Tensor avg_pool(const Tensor& x, const std::vector<int64_t>& ksize,
                const std::vector<int64_t>& strides = {}, const std::string& padding = "VALID",
                const std::string& name = "");

// ---- indices --------------------------------------------------------------
// indices.shape + [output_dim]; on_value where index == position.
Tensor one_hot(const Tensor& indices, const Dimension& output_dim, float on_value = 1.0f,
               float off_value = 0.0f, DType dtype = float32);
// [dim] holding 0, 1, ..., dim.size-1.
Tensor range(const Mesh& mesh, const Dimension& dim, DType dtype = int32);
// weights indexed along dim by int32 indices: shape indices.shape + (weights
// without dim). Out-of-range indices give zeros, as a one_hot product would.
// Dimensions the indices share with the weights are batch dimensions, as in
// Mesh TensorFlow: gather(w[b, v, d], idx[b, l], v) is out[b, l, d] =
// w[b, idx[b, l], d].
Tensor gather(const Tensor& weights, const Tensor& indices, const DimRef& dim);
// The same, its dimensions in the order of output_shape (Mesh TensorFlow's
// output_shape argument; it must hold exactly the result's dimensions).
Tensor gather(const Tensor& weights, const Tensor& indices, const DimRef& dim,
              const Shape& output_shape);

// ---- randomness (counter-based: the same numbers under every layout) -----
// Keyed by seed (0 = derived from the graph seed and the op name), by the
// Session's run counter and by each element's logical index.
Tensor random_uniform(const Mesh& mesh, const Shape& shape, float minval = 0.0f,
                      float maxval = 1.0f, uint64_t seed = 0);
Tensor random_normal(const Mesh& mesh, const Shape& shape, float mean = 0.0f, float stddev = 1.0f,
                     uint64_t seed = 0);
// x * mask / keep_prob with mask ~ Bernoulli(keep_prob) drawn over noise_shape
// (default x's shape) and broadcast.
Tensor dropout(const Tensor& x, float keep_prob, uint64_t seed = 0,
               const Shape* noise_shape = nullptr);

// ---- losses ---------------------------------------------------------------
// Per-example -sum(targets * log_softmax(logits)) over vocab_dim, plus
// z_loss * logsumexp(logits)^2 when z_loss > 0. targets: probabilities of
// logits' shape, or int32 class ids of logits' shape without vocab_dim.
Tensor softmax_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                         const DimRef& vocab_dim, float z_loss = 0.0f);
// Elementwise -(z log sigmoid(x) + (1 - z) log(1 - sigmoid(x))) for logits x
// and targets z of one shape, in the stable form max(x, 0) - x z +
// log(1 + exp(-|x|)) (Mesh TensorFlow's layers.sigmoid_cross_entropy_with_logits).
Tensor sigmoid_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets);

}  // namespace mtf
