// mtf/layers.h — neural-network layers over named dimensions, following the
// semantics of Mesh TensorFlow's layers.py.
//
// Layers are compositions of ops: their gradients come from autodiff and
// they run under any layout (a split `heads`, `d_ff`, `vocab` or `batch`
// dimension only changes which collectives the lowering inserts). Each layer
// creates its variables under `name` ("<name>/kernel", ...); calling a layer
// again with the same name reuses them (so one model function can build a
// training graph with dropout and an evaluation graph without), and a reused
// name with another shape is a ShapeError naming both shapes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mtf/graph.h"
#include "mtf/ops.h"
#include "mtf/variables.h"

namespace mtf::layers {

// The variable `name` if the graph has it (same shape and slice dtype
// required), otherwise a new one; either way read in dtype.activation.
Tensor get_or_create_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                              Initializer initializer, const VariableDType& dtype,
                              bool trainable = true);
Tensor get_or_create_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                              Initializer initializer, DType dtype = float32,
                              bool trainable = true);
// The variable dtype a layer uses for input x when given none: a float32
// master, the graph's layer_slice_dtype() (float32 unless set), read in x's
// float dtype (bfloat16 activations compute with float32 weights cast to
// bfloat16, as the paper's runs did).
VariableDType variable_dtype_for(const Tensor& x);

// Normal initializer with stddev sqrt(scale / fan_in) (Mesh TensorFlow's
// variance-scaling default for dense kernels), fan_in = product of the sizes
// of `reduced` dimensions.
Initializer variance_scaling(const std::vector<Dimension>& reduced, float scale = 1.0f);

// Mesh TensorFlow's VarianceScalingInitializer(scale, mode, distribution)
// for a kernel that reduces `reduced` and makes `new_dims`: variance scale /
// fan, fan = fan_in (the product of reduced's sizes), fan_out (of
// new_dims') or fan_avg (their mean); distribution "normal" or
// "truncated_normal" (a normal cut at two standard deviations, its stddev
// divided by 0.8796... so the variance is still scale / fan),
// "untruncated_normal" or "uniform" (+-sqrt(3 scale / fan)). ValueError
// for another mode or distribution, or scale <= 0.
struct VarianceScaling {
  float scale = 1.0f;
  std::string mode = "fan_in";
  std::string distribution = "normal";
  Initializer for_kernel(const std::vector<Dimension>& reduced,
                         const std::vector<Dimension>& new_dims) const;
};

struct DenseOptions {
  bool use_bias = true;
  // Applied to the output (e.g. relu); none when empty.
  std::function<Tensor(const Tensor&)> activation;
  // Kernel initializer; default variance_scaling(reduced_dims), or
  // `variance_scaling_options` for the kernel's dimensions when set.
  bool has_initializer = false;
  Initializer kernel_initializer;
  std::optional<VarianceScaling> variance_scaling_options;
  // Mesh TensorFlow's expert_dims: dimensions of x the kernel (and bias)
  // also has, one kernel per expert (kept in the output, not reduced).
  std::vector<Dimension> expert_dims;
  // Mesh TensorFlow's kernel_weights: this tensor is the kernel (its
  // dimensions expert_dims + reduced_dims + new_dims in any order) instead
  // of a variable "<name>/kernel".
  Tensor kernel_weights;
  // The kernel's and bias's VariableDType; default variable_dtype_for(x).
  std::optional<VariableDType> variable_dtype;
};

// einsum(x, kernel[expert_dims + reduced_dims + new_dims]) (+
// bias[expert_dims + new_dims]): the output has x's dimensions minus
// reduced_dims, plus new_dims. reduced_dims empty means x's last dimension
// (not an expert dimension). Variables "<name>/kernel", "<name>/bias".
Tensor dense(const Tensor& x, const std::vector<Dimension>& new_dims,
             const std::vector<Dimension>& reduced_dims, const std::string& name,
             const DenseOptions& options = {});
Tensor dense(const Tensor& x, const Dimension& new_dim, const std::string& name,
             const DenseOptions& options = {});

struct ConvOptions {
  // One per spatial dimension, or empty for all 1 (see mtf::conv).
  std::vector<int64_t> strides;
  std::string padding = "SAME";
  std::vector<int64_t> dilations;
  bool use_bias = true;
  // Applied to the output (e.g. relu); none when empty.
  std::function<Tensor(const Tensor&)> activation;
  // Filter initializer; default variance_scaling over the window and the
  // input channels (the filter's fan-in).
  bool has_initializer = false;
  Initializer filter_initializer;
};

// Mesh TensorFlow's conv layers: x is [batch..., spatial..., channels] (the
// filter_size.size() dimensions before the last are spatial); the result is
// conv(x, filter) (+ bias[output_dim]) with output_dim replacing the
// channels. Variables "<name>/filter" [<name>_k0..., channels, output_dim]
// and "<name>/bias". Spatial dimensions may be split by the layout (see
// mtf::conv).
Tensor conv(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
            const std::string& name, const ConvOptions& options = {});
Tensor conv1d(const Tensor& x, const Dimension& output_dim, int64_t filter_size,
              const std::string& name, const ConvOptions& options = {});
// Mesh TensorFlow's separable_conv1d over x [..., length, depth] (its last
// two dimensions): a depthwise filter over relative positions
// min_relative_pos..max_relative_pos (out[i] = sum_r w_r[depth] *
// x[i + r], zeros beyond the ends; "<name>/depthwise_dense_<k>/kernel",
// bias on the first only), then a pointwise dense to output_dim
// ("<name>/pointwise_dense"). Initializers: VarianceScaling with
// depthwise_scale / filter width and pointwise_scale. kernel_depth_weights:
// one [depth] tensor per relative position, used instead of variables.
Tensor separable_conv1d(const Tensor& x, const Dimension& output_dim, int min_relative_pos = -1,
                        int max_relative_pos = 1, const std::string& name = "separable_conv1d",
                        float depthwise_scale = 1.0f, float pointwise_scale = 1.0f,
                        bool use_bias = true, const std::vector<Tensor>& kernel_depth_weights = {});
Tensor conv2d(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
              const std::string& name, const ConvOptions& options = {});
Tensor conv3d(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
              const std::string& name, const ConvOptions& options = {});
// Transposed convolutions (upsampling by the strides): filter
// [<name>_k0..., output_dim, channels] (TensorFlow's order).
Tensor conv_transpose(const Tensor& x, const Dimension& output_dim,
                      const std::vector<int64_t>& filter_size, const std::string& name,
                      const ConvOptions& options = {});
Tensor conv2d_transpose(const Tensor& x, const Dimension& output_dim,
                        const std::vector<int64_t>& filter_size, const std::string& name,
                        const ConvOptions& options = {});
Tensor conv3d_transpose(const Tensor& x, const Dimension& output_dim,
                        const std::vector<int64_t>& filter_size, const std::string& name,
                        const ConvOptions& options = {});
// Mesh TensorFlow's pooling layers: windows of ksize with strides = ksize
// and VALID padding over the dimensions before the last.
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& ksize = {2, 2});
Tensor max_pool3d(const Tensor& x, const std::vector<int64_t>& ksize = {2, 2, 2});
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& ksize = {2, 2});
Tensor avg_pool3d(const Tensor& x, const std::vector<int64_t>& ksize = {2, 2, 2});

// (x - mean) / sqrt(var + epsilon) * scale + bias over `dim`; scale starts at
// one, bias at zero ("<name>/scale", "<name>/bias"). bfloat16 x: the mean
// and variance in float32, the rest in bfloat16 (scale and bias float32
// masters read as bfloat16).
Tensor layer_norm(const Tensor& x, const DimRef& dim, const std::string& name,
                  float epsilon = 1e-6f);

// T5's layer norm: x / sqrt(mean over `dim` of x^2 + epsilon) * scale, no
// centering and no bias; scale ("<name>/scale") starts at one. bfloat16 x:
// the mean square in float32, the rest in bfloat16.
Tensor rms_norm(const Tensor& x, const DimRef& dim, const std::string& name, float epsilon = 1e-6f);

// Batch normalization over `reduced_dims` (e.g. batch and spatial
// dimensions): in training, (x - batch mean) / sqrt(batch variance +
// epsilon) * scale + bias, and `updates` move "<name>/moving_mean" and
// "/moving_variance" towards the batch statistics (moving = moving *
// momentum + batch * (1 - momentum)); in evaluation the moving statistics
// normalize. scale starts at one (zero with init_zero), bias at zero; all
// have x's shape without reduced_dims.
struct BatchNorm {
  Tensor output;
  std::vector<Operation*> updates;  // run them with the training step
};
BatchNorm batch_norm(const Tensor& x, bool is_training, const std::vector<Dimension>& reduced_dims,
                     const std::string& name, float momentum = 0.99f, float epsilon = 1e-3f,
                     bool init_zero = false);

// Rows of a [vocab_dim, output_dim] table ("<name>/weights", normal with
// stddev init_stddev) picked by int32 ids: ids.shape + [output_dim], in
// dtype.activation (the table kept as dtype.slice).
Tensor embedding(const Tensor& ids, const Dimension& vocab_dim, const Dimension& output_dim,
                 const std::string& name, float init_stddev = 1.0f,
                 const VariableDType& dtype = VariableDType(),
                 const std::optional<Dimension>& ensemble_dim = std::nullopt);
// The table embedding() reads, "<name>/weights" [vocab_dim, output_dim]
// (with ensemble_dims first when given: one table per ensemble member, ids
// then carry that dimension too; Mesh TensorFlow also passes several, e.g.
// one table per mixture component); initializer default normal(0, 1), as
// Mesh TensorFlow's embedding_weights.
Tensor embedding_weights(const Mesh& mesh, const Dimension& vocab_dim, const Dimension& output_dim,
                         const VariableDType& dtype, const std::string& name = "embedding",
                         const std::vector<Dimension>& ensemble_dims = {},
                         const std::optional<Initializer>& initializer = std::nullopt);
// The same with one ensemble dimension.
Tensor embedding_weights(const Mesh& mesh, const Dimension& vocab_dim, const Dimension& output_dim,
                         const VariableDType& dtype, const std::string& name,
                         const Dimension& ensemble_dim,
                         const std::optional<Initializer>& initializer = std::nullopt);

// Dropout that is the identity when keep_prob is 1.
Tensor dropout_if(const Tensor& x, float keep_prob, const Shape* noise_shape = nullptr);

// [query_length, memory_length] float32 mask: 0 where memory position <=
// query position, -1e9 after it (added to attention logits). memory_dim has
// query_dim's size and another name.
Tensor attention_mask_autoregressive(const Mesh& mesh, const Dimension& query_dim,
                                     const Dimension& memory_dim);

// float32 attention bias, -1e9 where the memory position is padding (its id
// is 0) and 0 elsewhere: memory_ids' shape (add it to logits over queries
// by name, as Mesh TensorFlow's attention_mask_ignore_padding).
Tensor attention_mask_ignore_padding(const Tensor& memory_ids);

// float32 attention bias for packed rows, -1e9 where the query's segment id
// differs from the memory position's and 0 where they match: the union of
// query_segment's and memory_segment's shapes (int32 ids; the length
// dimensions must have different names, e.g. [batch, length] and [batch,
// memory_length]).
Tensor attention_mask_same_segment(const Tensor& query_segment, const Tensor& memory_segment);

// T5's bucket of each relative position (memory position - query
// position, int32): with `bidirectional`, half the buckets for memory
// positions after the query; the first half of the rest count distances
// one by one, the others grow logarithmically up to max_distance (farther
// shares the last bucket). int32, relative_position's shape. ValueError for
// num_buckets < 2 (4 bidirectional) or max_distance not above the exact
// range.
Tensor relative_position_bucket(const Tensor& relative_position, bool bidirectional,
                                int64_t num_buckets = 32, int64_t max_distance = 128);

// T5's relative position bias: a learned [heads, buckets] table
// ("<name>/relative_attention_bias", zeros at first) read at the bucket of
// memory_position - query_position, float32, shaped [query_position's
// dimensions, memory_position's others, heads] (add it to the attention
// logits, by name).
// Positions are int32 ([length] from range(), or per example [batch,
// length] for packed rows); their length dimensions have different names.
Tensor relative_position_bias(const Tensor& query_position, const Tensor& memory_position,
                              const Dimension& heads, bool bidirectional, const std::string& name,
                              int64_t num_buckets = 32, int64_t max_distance = 128);

// softmax over memory_dim of einsum(q, k) (+ mask), then einsum with v.
// q: [..., query_length, kv_dim], k: [..., memory_dim, kv_dim], v:
// [..., memory_dim, kv_dim] (the output then has q's shape) or [...,
// memory_dim, depth_v] (kv_dim replaced by depth_v). No
// scaling of the logits (multihead_attention folds 1/sqrt(d_kv) into the
// query projection's initializer, as Mesh TensorFlow does).
Tensor dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Dimension& kv_dim, const Dimension& memory_dim,
                             float keep_prob = 1.0f);

struct AttentionDims {
  Dimension heads;          // e.g. {"heads", 8}
  Dimension kv;             // e.g. {"d_kv", 64}
  Dimension memory_length;  // memory_antecedent's length dimension
};

// Multi-head attention: q, k, v projections [io, heads, kv] ("<name>/q",
// "/k", "/v"), dot_product_attention per head, output projection
// [heads, kv, io] ("<name>/o"). io is query_antecedent's last dimension;
// memory_antecedent has dims.memory_length in place of the query length
// (for self-attention pass the query renamed). `mask` may be invalid.
Tensor multihead_attention(const Tensor& query_antecedent, const Tensor& memory_antecedent,
                           const Tensor& mask, const AttentionDims& dims, const std::string& name,
                           float keep_prob = 1.0f);

// multihead_attention's four weights for channels `io`: q, k, v [io, heads,
// kv] and o [heads, kv, io] ("<name>/q", ...), made or found by name in
// `dtype` (1/sqrt(kv) folded into q's initializer). The local-attention
// layers below share them.
struct AttentionParams {
  Tensor q, k, v, o;
};
AttentionParams attention_params(const Mesh& mesh, const Dimension& io, const Dimension& heads,
                                 const Dimension& kv, const std::string& name,
                                 const VariableDType& dtype);

// Mesh TensorFlow's attention_bias_local_block: the float32 bias
// [block_length, memory_length] (memory_length twice block_length long: the
// previous block, then this one) that lets a position of a block see the
// previous block and this block up to itself (-1e9 after it).
Tensor attention_bias_local_block(const Mesh& mesh, const Dimension& block_length,
                                  const Dimension& memory_length);
// The same in two dimensions, for blocks of h_dim x w_dim positions whose
// memory is [memory_h_dim, memory_w_dim], each twice as long (the blocks
// above and to the left, then this one): a position sees the memory rows
// above its own row, and its own row up to itself, in raster order.
Tensor attention_bias_local_2d_block(const Mesh& mesh, const Dimension& h_dim,
                                     const Dimension& w_dim, const Dimension& memory_h_dim,
                                     const Dimension& memory_w_dim);

// Mesh TensorFlow's masked_local_attention_1d: causal self-attention of x
// [batch..., length, io] within blocks of length_per_split's greatest
// divisor <= max(window_size, 128), each block's keys and values extended
// by the window_size positions before it (left_halo_exchange along the
// blocks, which keep the length's name and so its layout): position p sees
// the block-extended window before it as that function's mask allows.
// Weights as attention_params(name). length_per_split 0: the whole length.
Tensor masked_local_attention_1d(const Tensor& x, const Dimension& kv, const Dimension& heads,
                                 int64_t window_size, const std::string& name,
                                 int64_t length_per_split = 0);
// One decoding step of it: x [batch..., io] at int32 scalar step_num, the
// keys and values of the last window positions [batch..., heads,
// window_length, kv] (position step_num % window_length is overwritten).
struct LocalAttentionStep {
  Tensor y, k, v;  // y: x's shape; the new keys and values
};
LocalAttentionStep masked_local_attention_1d_incremental(const Tensor& x, const Tensor& prev_k,
                                                         const Tensor& prev_v,
                                                         const Tensor& step_num,
                                                         const std::string& name);
// Mesh TensorFlow's local_self_attention_spatial_blocks: x [batch,
// num_w_blocks, w_dim, io]; each block attends to itself and its
// neighbour blocks (the previous one only, causally, with mask_right).
Tensor local_self_attention_spatial_blocks(const Tensor& x, const Dimension& kv,
                                           const Dimension& heads, bool mask_right,
                                           const std::string& name);
// Its 2-D form: x [batch, num_h_blocks, num_w_blocks, h_dim, w_dim, io];
// each block attends to the blocks around it (above and to the left only,
// with the raster-order mask above, when mask_right).
Tensor local_2d_self_attention_spatial_blocks(const Tensor& x, const Dimension& kv,
                                              const Dimension& heads, bool mask_right,
                                              const std::string& name);
// Mesh TensorFlow's multihead_self_attention_memory_compressed: self-
// attention of x [batch..., length, io] over its memory averaged in groups
// of compression_factor positions (compress_mean), with an extra zero logit;
// mask_right: a position sees the groups that end at or before it.
Tensor multihead_self_attention_memory_compressed(const Tensor& x, bool mask_right,
                                                  int64_t compression_factor, const Dimension& kv,
                                                  const Dimension& heads, const std::string& name,
                                                  float keep_prob = 1.0f);
// x averaged over groups of `factor` consecutive positions of dim (whose
// size it must divide): dim, factor times shorter, keeps its name.
Tensor compress_mean(const Tensor& x, const DimRef& dim, int64_t factor);

// dense(x, hidden, relu, no bias) -> dropout -> dense back to x's last
// dimension, no bias ("<name>/wi", "<name>/wo").
Tensor dense_relu_dense(const Tensor& x, const Dimension& hidden_dim, const std::string& name,
                        float keep_prob = 1.0f);

// A mixture-of-experts feed-forward layer (Mesh TensorFlow's moe.py, top-2
// gating): each token of x [groups..., group, model] goes to the two experts
// its learned gate ranks highest, weighted by their renormalised gates; an
// expert takes at most ceil(group size * capacity_factor / experts) tokens
// per group (first choices first) and the rest of its tokens pass it by
// (zero output). Experts are a named dimension ("experts"); the gating
// sees them as "experts_unsplit", and the experts see each group dimension
// g as "g_unsplit", with a renaming reshape between: with the groups and the
// experts split over one mesh axis (Mesh TensorFlow's layout, e.g.
// "batch:b;experts:b"), dispatch and combine are alltoalls; experts over
// another axis work too (add "g_unsplit:<g's axis>" to keep g split).
// Variables "<name>/gate" [model, experts_unsplit], "<name>/wi" [experts, model,
// hidden], "<name>/wo" [experts, hidden, model]. With bfloat16 x the gating
// and routing run in float32 (a float32 gate) and the experts in bfloat16
// (variable_dtype_for(x)); the loss is float32.
struct MoeOptions {
  Dimension experts{"experts", 4};
  Dimension hidden{"expert_hidden", 256};
  float capacity_factor = 2.0f;
  float loss_coef = 1e-2f;  // of the load-balancing loss
};
struct MoeOutput {
  Tensor y;     // x's shape
  Tensor loss;  // scalar load-balancing loss (times loss_coef): add it to the training loss
};
MoeOutput moe(const Tensor& x, const DimRef& group, const std::string& name,
              const MoeOptions& options = {});

// Mean over every dimension of the per-example softmax cross-entropy of
// `logits` against int32 `targets` over vocab_dim, with z_loss *
// logsumexp^2 added when z_loss > 0.
Tensor softmax_cross_entropy_mean(const Tensor& logits, const Tensor& targets,
                                  const DimRef& vocab_dim, float z_loss = 0.0f);

}  // namespace mtf::layers
