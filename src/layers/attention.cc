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

Tensor dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Dimension& kv_dim, const Dimension& memory_dim,
                             float keep_prob) {
  const OriginScope origin = ops::made_by("layers::dot_product_attention", q);
  Tensor logits = einsum({q, k}, q.shape().minus(Shape({kv_dim})).union_with(Shape({memory_dim})));
  if (mask.valid())
    logits = logits + (mask.dtype() == logits.dtype() ? mask : cast(mask, logits.dtype()));
  Tensor weights = softmax(logits, memory_dim);
  weights = dropout_if(weights, keep_prob);
  return einsum({weights, v}, q.shape());
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
  const Mesh& mesh = query_antecedent.mesh();
  const Shape proj({io, dims.heads, dims.kv});
  // As Mesh TensorFlow: 1/sqrt(d_kv) folded into q's initializer.
  const float q_std = static_cast<float>(1.0 / std::sqrt(double(io.size) * double(dims.kv.size)));
  const float kv_std = static_cast<float>(1.0 / std::sqrt(double(io.size)));
  const float o_std = static_cast<float>(1.0 / std::sqrt(double(dims.heads.size * dims.kv.size)));
  const VariableDType vd = variable_dtype_for(query_antecedent);
  const Tensor wq =
      get_or_create_variable(mesh, name + "/q", proj, Initializer::normal(0.0f, q_std), vd);
  const Tensor wk =
      get_or_create_variable(mesh, name + "/k", proj, Initializer::normal(0.0f, kv_std), vd);
  const Tensor wv =
      get_or_create_variable(mesh, name + "/v", proj, Initializer::normal(0.0f, kv_std), vd);
  const Tensor wo = get_or_create_variable(mesh, name + "/o", Shape({dims.heads, dims.kv, io}),
                                           Initializer::normal(0.0f, o_std), vd);
  const Shape q_shape = qs.minus(Shape({io})).union_with(Shape({dims.heads, dims.kv}));
  const Shape m_shape =
      memory_antecedent.shape().minus(Shape({io})).union_with(Shape({dims.heads, dims.kv}));
  const Tensor q = einsum({query_antecedent, wq}, q_shape);
  const Tensor k = einsum({memory_antecedent, wk}, m_shape);
  const Tensor v = einsum({memory_antecedent, wv}, m_shape);
  const Tensor o = dot_product_attention(q, k, v, mask, dims.kv, dims.memory_length, keep_prob);
  return einsum({o, wo}, qs);
}

}  // namespace mtf::layers
