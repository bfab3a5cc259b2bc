// Attention: the autoregressive mask, dot-product attention and multi-head
// attention with named heads / d_kv dimensions (include/mtf/layers.h).
#include <cmath>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor attention_mask_autoregressive(const Mesh& mesh, const Dimension& query_dim,
                                     const Dimension& memory_dim) {
  if (query_dim.size != memory_dim.size || query_dim.name == memory_dim.name) {
    throw ShapeError(detail::str_cat("attention_mask_autoregressive: memory dimension ",
                                     memory_dim.to_string(), " must have query dimension ",
                                     query_dim.to_string(), "'s size and another name"));
  }
  const Tensor query_pos = range(mesh, query_dim);
  const Tensor memory_pos = range(mesh, memory_dim);
  return cast(less(query_pos, memory_pos), float32) * -1e9f;
}

namespace {

void require_int32(const char* what, const char* operand, const Tensor& t) {
  if (!t.valid()) throw ValueError(std::string(what) + ": " + operand + " is an invalid tensor");
  if (t.dtype() != int32) {
    throw DTypeError(std::string(what) + ": " + operand + " " + t.describe() +
                     " must be int32 (ids or positions)");
  }
}

}  // namespace

Tensor attention_mask_ignore_padding(const Tensor& memory_ids) {
  require_int32("attention_mask_ignore_padding", "memory_ids", memory_ids);
  return cast(equal(memory_ids, memory_ids * 0), float32) * -1e9f;
}

Tensor attention_mask_same_segment(const Tensor& query_segment, const Tensor& memory_segment) {
  require_int32("attention_mask_same_segment", "query_segment", query_segment);
  require_int32("attention_mask_same_segment", "memory_segment", memory_segment);
  return cast(not_equal(query_segment, memory_segment), float32) * -1e9f;
}

Tensor relative_position_bucket(const Tensor& relative_position, bool bidirectional,
                                int64_t num_buckets, int64_t max_distance) {
  require_int32("relative_position_bucket", "relative_position", relative_position);
  const int64_t half = bidirectional ? num_buckets / 2 : num_buckets;
  const int64_t max_exact = half / 2;
  if (max_exact < 1 || max_distance <= max_exact) {
    throw ValueError(detail::str_cat("relative_position_bucket: ", num_buckets, " buckets",
                                     bidirectional ? " (bidirectional)" : "", " up to distance ",
                                     max_distance, ": need at least ", bidirectional ? 4 : 2,
                                     " buckets and a max_distance above ", max_exact,
                                     ", the distances counted one by one"));
  }
  const OriginScope origin = ops::made_by("layers::relative_position_bucket", relative_position);
  Tensor n = -relative_position;  // how far back the memory position is
  Tensor ret = n * 0;
  if (bidirectional) {
    ret = cast(less(n, ret), int32) * static_cast<float>(half);  // memory after the query
    n = abs(n);
  } else {
    n = maximum(n, ret);
  }
  // Distances from max_exact on, on a log scale: int(log(n / max_exact) /
  // log(max_distance / max_exact) * (half - max_exact)), as T5 computes it
  // in float32 (n below max_exact is not used; max() keeps the log finite).
  const Tensor far = cast(maximum(n, n * 0 + static_cast<float>(max_exact)), float32);
  const float log_range = static_cast<float>(
      std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  Tensor large = cast(log(far / static_cast<float>(max_exact)) / log_range *
                          static_cast<float>(half - max_exact),
                      int32) +
                 static_cast<float>(max_exact);
  large = minimum(large, large * 0 + static_cast<float>(half - 1));
  const Tensor is_small = less(n, n * 0 + static_cast<float>(max_exact));
  return ret + where(is_small, n, large);
}

Tensor relative_position_bias(const Tensor& query_position, const Tensor& memory_position,
                              const Dimension& heads, bool bidirectional, const std::string& name,
                              int64_t num_buckets, int64_t max_distance) {
  require_int32("relative_position_bias", "query_position", query_position);
  require_int32("relative_position_bias", "memory_position", memory_position);
  const OriginScope origin =
      ops::made_by("layers::relative_position_bias \"" + name + "\"", query_position);
  const Dimension buckets{"relative_buckets", num_buckets};
  const Tensor table =
      get_or_create_variable(query_position.mesh(), name + "/relative_attention_bias",
                             Shape({heads, buckets}), Initializer::zeros());
  const Shape positions = query_position.shape().union_with(memory_position.shape());
  const Tensor bucket =
      relative_position_bucket(subtract(memory_position, query_position, &positions), bidirectional,
                               num_buckets, max_distance);
  return gather(table, bucket, buckets);
}

Tensor dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Dimension& kv_dim, const Dimension& memory_dim,
                             float keep_prob) {
  const OriginScope origin = ops::made_by("layers::dot_product_attention", q);
  Tensor logits = einsum({q, k}, q.shape().minus(Shape({kv_dim})).union_with(Shape({memory_dim})));
  if (mask.valid())
    logits = logits + (mask.dtype() == logits.dtype() ? mask : cast(mask, logits.dtype()));
  Tensor weights = softmax(logits, memory_dim);
  weights = dropout_if(weights, keep_prob);
  // q's shape, or with v's own depth in place of kv_dim (Mesh TensorFlow's
  // depth_v).
  const Shape out =
      v.shape().contains(kv_dim.name)
          ? q.shape()
          : q.shape().minus(Shape({kv_dim})).union_with(v.shape().minus(Shape({memory_dim})));
  return einsum({weights, v}, out);
}

Tensor multihead_attention(const Tensor& query_antecedent, const Tensor& memory_antecedent,
                           const Tensor& mask, const AttentionDims& dims, const std::string& name,
                           float keep_prob) {
  const OriginScope origin =
      ops::made_by("layers::multihead_attention \"" + name + "\"", query_antecedent);
  const Shape& qs = query_antecedent.shape();
  if (qs.empty()) throw ShapeError("multihead_attention \"" + name + "\": query is a scalar");
  const Dimension io = qs[qs.ndims() - 1];
  if (!memory_antecedent.shape().contains(io) ||
      !memory_antecedent.shape().contains(dims.memory_length)) {
    throw ShapeError(detail::str_cat(
        "multihead_attention \"", name, "\": memory ", memory_antecedent.describe(),
        " must have the query's channel dimension ", io.to_string(), " and the memory length ",
        dims.memory_length.to_string(), " (for self-attention, rename the query's length)"));
  }
  if (qs.contains(dims.memory_length.name)) {
    throw ShapeError(detail::str_cat("multihead_attention \"", name, "\": query ",
                                     query_antecedent.describe(), " already has the memory length ",
                                     "dimension \"", dims.memory_length.name, "\""));
  }
  const AttentionParams w = attention_params(query_antecedent.mesh(), io, dims.heads, dims.kv, name,
                                             variable_dtype_for(query_antecedent));
  const Shape q_shape = qs.minus(Shape({io})).union_with(Shape({dims.heads, dims.kv}));
  const Shape m_shape =
      memory_antecedent.shape().minus(Shape({io})).union_with(Shape({dims.heads, dims.kv}));
  const Tensor q = einsum({query_antecedent, w.q}, q_shape);
  const Tensor k = einsum({memory_antecedent, w.k}, m_shape);
  const Tensor v = einsum({memory_antecedent, w.v}, m_shape);
  const Tensor o = dot_product_attention(q, k, v, mask, dims.kv, dims.memory_length, keep_prob);
  return einsum({o, w.o}, qs);
}

AttentionParams attention_params(const Mesh& mesh, const Dimension& io, const Dimension& heads,
                                 const Dimension& kv, const std::string& name,
                                 const VariableDType& dtype) {
  const Shape proj({io, heads, kv});
  // As Mesh TensorFlow: 1/sqrt(d_kv) folded into q's initializer.
  const float q_std = static_cast<float>(1.0 / std::sqrt(double(io.size) * double(kv.size)));
  const float kv_std = static_cast<float>(1.0 / std::sqrt(double(io.size)));
  const float o_std = static_cast<float>(1.0 / std::sqrt(double(heads.size * kv.size)));
  AttentionParams w;
  w.q = get_or_create_variable(mesh, name + "/q", proj, Initializer::normal(0.0f, q_std), dtype);
  w.k = get_or_create_variable(mesh, name + "/k", proj, Initializer::normal(0.0f, kv_std), dtype);
  w.v = get_or_create_variable(mesh, name + "/v", proj, Initializer::normal(0.0f, kv_std), dtype);
  w.o = get_or_create_variable(mesh, name + "/o", Shape({heads, kv, io}),
                               Initializer::normal(0.0f, o_std), dtype);
  return w;
}

}  // namespace mtf::layers
