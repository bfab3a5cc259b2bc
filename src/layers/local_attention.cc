// Local attention (include/mtf/layers.h), after Mesh TensorFlow's layers.py:
// masked local 1-D attention and its decoding step, attention within
// spatial blocks (1-D and 2-D) and memory-compressed attention — einsums,
// halo exchanges and masks over attention_params' weights.
#include <algorithm>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {
namespace {

Shape concat_shapes(const Shape& a, const std::vector<Dimension>& b) {
  std::vector<Dimension> dims = a.dims();
  dims.insert(dims.end(), b.begin(), b.end());
  return Shape(dims);
}

// x's dimensions [batch..., length, io] (ShapeError naming `what` for fewer).
struct SequenceDims {
  Shape batch;
  Dimension length, io;
};
SequenceDims sequence_dims(const Tensor& x, const std::string& what) {
  const Shape& s = x.shape();
  if (s.ndims() < 2) {
    throw ShapeError(what + ": x " + x.describe() + " needs [batch..., length, channels]");
  }
  return {Shape(std::vector<Dimension>(s.dims().begin(), s.dims().end() - 2)), s[s.ndims() - 2],
          s[s.ndims() - 1]};
}

// softmax over memory of (q . k + mask), times v: Mesh TensorFlow's
// dot_product_attention with an optional extra logit.
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              const Dimension& kv, const Dimension& memory, const Tensor& extra_logit = Tensor(),
              float keep_prob = 1.0f) {
  Tensor logits = einsum({q, k}, q.shape().minus(Shape({kv})).union_with(Shape({memory})));
  if (mask.valid()) logits = logits + cast(mask, logits.dtype());
  Tensor weights =
      extra_logit.valid() ? softmax(logits, memory, extra_logit) : softmax(logits, memory);
  weights = dropout_if(weights, keep_prob);
  return einsum({weights, v}, q.shape());
}

// x with each block along `blocks` extended by its neighbours' halo along
// `block`: the previous ones only (causal), or both sides.
Tensor with_halo(const Tensor& x, const Dimension& blocks, const Dimension& block, int64_t halo,
                 bool left_only) {
  return left_only ? left_halo_exchange(x, blocks, block, halo)
                   : halo_exchange(x, blocks, block, halo);
}

// A float32 range over d, shifted by `offset`.
Tensor positions(const Mesh& mesh, const Dimension& d, float offset = 0.0f) {
  return range(mesh, d, float32) + offset;
}

}  // namespace

Tensor attention_bias_local_block(const Mesh& mesh, const Dimension& block_length,
                                  const Dimension& memory_length) {
  const Dimension memory{memory_length.name, block_length.size};
  if (memory.name == block_length.name)
    throw ShapeError("attention_bias_local_block: the memory dimension needs its own name");
  // The previous block: all visible; this block: up to the position.
  const Tensor previous = zeros(mesh, Shape({block_length, memory}));
  const Tensor ahead = cast(less(positions(mesh, block_length), positions(mesh, memory)), float32);
  return concat({previous, ahead}, memory.name) * -1e9f;
}

Tensor attention_bias_local_2d_block(const Mesh& mesh, const Dimension& h_dim,
                                     const Dimension& w_dim, const Dimension& memory_h_dim,
                                     const Dimension& memory_w_dim) {
  const Dimension mh{memory_h_dim.name, 2 * h_dim.size}, mw{memory_w_dim.name, 2 * w_dim.size};
  // Memory rows and columns relative to the block's first: negative ones
  // belong to the blocks above and to the left.
  const Tensor row = positions(mesh, mh, -static_cast<float>(h_dim.size));
  const Tensor col = positions(mesh, mw, -static_cast<float>(w_dim.size));
  const Tensor i = positions(mesh, h_dim), j = positions(mesh, w_dim);
  const Tensor visible = logical_or(less(row, i), logical_and(equal(row, i), less_equal(col, j)));
  return transpose(cast(logical_not(visible), float32) * -1e9f, Shape({h_dim, w_dim, mh, mw}));
}

Tensor masked_local_attention_1d(const Tensor& x, const Dimension& kv, const Dimension& heads,
                                 int64_t window_size, const std::string& name,
                                 int64_t length_per_split) {
  const std::string what = "masked_local_attention_1d \"" + name + "\"";
  const OriginScope origin = ops::made_by(what, x);
  const SequenceDims d = sequence_dims(x, what);
  const int64_t per_split = length_per_split > 0 ? length_per_split : d.length.size;
  if (window_size < 1 || d.length.size % per_split != 0) {
    throw ValueError(detail::str_cat(what, ": needs window_size >= 1 (got ", window_size,
                                     ") and length_per_split dividing ", d.length.to_string(),
                                     " (got ", length_per_split, ")"));
  }
  int64_t block = std::max<int64_t>(window_size, 128);
  while (per_split % block != 0) --block;
  const Mesh& mesh = x.mesh();
  const AttentionParams w = attention_params(mesh, d.io, heads, kv, name, variable_dtype_for(x));
  const Shape qkv = concat_shapes(d.batch, {heads, d.length, kv});
  // The blocks keep the length's name, so they are laid out as it is.
  const Dimension blocks{d.length.name, d.length.size / block};
  const Dimension query_block{"query_block_length", block},
      memory_block{"memory_block_length", block};
  const Tensor q = replace_dimensions(einsum({x, w.q}, qkv), {d.length}, {blocks, query_block});
  Tensor k = replace_dimensions(einsum({x, w.k}, qkv), {d.length}, {blocks, memory_block});
  Tensor v = replace_dimensions(einsum({x, w.v}, qkv), {d.length}, {blocks, memory_block});
  k = left_halo_exchange(k, blocks, memory_block, window_size);
  v = left_halo_exchange(v, blocks, memory_block, window_size);
  const Dimension memory{"memory_block_length", window_size + block};
  const Tensor mpos = positions(mesh, memory);
  const Tensor qpos = positions(mesh, query_block, static_cast<float>(window_size));
  // Not ahead of the query, nor a block or more behind it.
  const Tensor mask = cast(greater(mpos, qpos), float32) * -1e9f +
                      cast(less_equal(mpos, qpos - static_cast<float>(block)), float32) * -1e9f;
  const Tensor o = attend(q, k, v, mask, kv, memory);
  return einsum({replace_dimensions(o, {blocks, query_block}, {d.length}), w.o}, x.shape());
}

LocalAttentionStep masked_local_attention_1d_incremental(const Tensor& x, const Tensor& prev_k,
                                                         const Tensor& prev_v,
                                                         const Tensor& step_num,
                                                         const std::string& name) {
  const std::string what = "masked_local_attention_1d_incremental \"" + name + "\"";
  const OriginScope origin = ops::made_by(what, x);
  const Shape& ks = prev_k.shape();
  if (x.shape().ndims() < 1 || ks.ndims() < 3 || !(prev_v.shape() == ks) ||
      step_num.dtype() != int32 || step_num.shape().ndims() != 0) {
    throw ShapeError(what + ": needs x [batch..., io], prev_k and prev_v [batch..., heads, " +
                     "window_length, kv] alike and an int32 scalar step_num (got " + x.describe() +
                     ", " + prev_k.describe() + ", " + prev_v.describe() + ", " +
                     step_num.describe() + ")");
  }
  const Dimension io = x.shape()[x.shape().ndims() - 1];
  const Dimension heads = ks[ks.ndims() - 3], window = ks[ks.ndims() - 2], kv = ks[ks.ndims() - 1];
  const Mesh& mesh = x.mesh();
  const AttentionParams w = attention_params(mesh, io, heads, kv, name, variable_dtype_for(x));
  const Shape one = x.shape().minus(Shape({io})).union_with(Shape({heads, kv}));
  const Tensor q = einsum({x, w.q}, one);
  const Tensor current =
      equal(range(mesh, window), mod(step_num, constant(mesh, float(window.size), Shape(), int32)));
  LocalAttentionStep out;
  out.k = transpose(where(current, einsum({x, w.k}, one), prev_k), ks);
  out.v = transpose(where(current, einsum({x, w.v}, one), prev_v), ks);
  out.y = einsum({attend(q, out.k, out.v, Tensor(), kv, window), w.o}, x.shape());
  return out;
}

Tensor local_self_attention_spatial_blocks(const Tensor& x, const Dimension& kv,
                                           const Dimension& heads, bool mask_right,
                                           const std::string& name) {
  const std::string what = "local_self_attention_spatial_blocks \"" + name + "\"";
  const OriginScope origin = ops::made_by(what, x);
  const Shape& s = x.shape();
  if (s.ndims() != 4)
    throw ShapeError(what + ": x " + x.describe() + " needs [batch, num_w_blocks, w, io]");
  const Dimension batch = s[0], blocks = s[1], wd = s[2], io = s[3];
  const Mesh& mesh = x.mesh();
  const AttentionParams w = attention_params(mesh, io, heads, kv, name, variable_dtype_for(x));
  const Dimension mw{"memory_" + wd.name, wd.size};
  const Tensor memory = rename_dimension(x, wd.name, mw.name);
  const Tensor q = einsum({x, w.q}, Shape({batch, heads, blocks, wd, kv}));
  Tensor k = einsum({memory, w.k}, Shape({batch, heads, blocks, mw, kv}));
  Tensor v = einsum({memory, w.v}, Shape({batch, heads, blocks, mw, kv}));
  k = with_halo(k, blocks, mw, wd.size, mask_right);
  v = with_halo(v, blocks, mw, wd.size, mask_right);
  const Dimension extended = k.shape()[k.shape().index_of(mw.name)];
  const Tensor mask = mask_right ? attention_bias_local_block(mesh, wd, mw) : Tensor();
  return einsum({attend(q, k, v, mask, kv, extended), w.o}, s);
}

Tensor local_2d_self_attention_spatial_blocks(const Tensor& x, const Dimension& kv,
                                              const Dimension& heads, bool mask_right,
                                              const std::string& name) {
  const std::string what = "local_2d_self_attention_spatial_blocks \"" + name + "\"";
  const OriginScope origin = ops::made_by(what, x);
  const Shape& s = x.shape();
  if (s.ndims() != 6) {
    throw ShapeError(what + ": x " + x.describe() +
                     " needs [batch, num_h_blocks, num_w_blocks, h, w, io]");
  }
  const Dimension batch = s[0], hb = s[1], wb = s[2], hd = s[3], wd = s[4], io = s[5];
  const Mesh& mesh = x.mesh();
  const AttentionParams w = attention_params(mesh, io, heads, kv, name, variable_dtype_for(x));
  const Dimension mh{"memory_" + hd.name, hd.size}, mw{"memory_" + wd.name, wd.size};
  const Tensor memory = rename_dimension(rename_dimension(x, hd.name, mh.name), wd.name, mw.name);
  const Tensor q = einsum({x, w.q}, Shape({batch, heads, hb, wb, hd, wd, kv}));
  const Shape kv_shape({batch, heads, hb, wb, mh, mw, kv});
  Tensor k = einsum({memory, w.k}, kv_shape), v = einsum({memory, w.v}, kv_shape);
  for (const auto& [blocks, block] : {std::pair{hb, mh}, std::pair{wb, mw}}) {
    k = with_halo(k, blocks, block, block.size, mask_right);
    v = with_halo(v, blocks, block, block.size, mask_right);
  }
  // One memory dimension over the extended rows and columns, for softmax.
  const Dimension rows = k.shape()[k.shape().index_of(mh.name)];
  const Dimension cols = k.shape()[k.shape().index_of(mw.name)];
  const Dimension flat{"memory_" + hd.name + "_" + wd.name, rows.size * cols.size};
  k = replace_dimensions(k, {rows, cols}, {flat});
  v = replace_dimensions(v, {rows, cols}, {flat});
  Tensor mask;
  if (mask_right)
    mask = replace_dimensions(attention_bias_local_2d_block(mesh, hd, wd, mh, mw), {rows, cols},
                              {flat});
  return einsum({attend(q, k, v, mask, kv, flat), w.o}, s);
}

Tensor compress_mean(const Tensor& x, const DimRef& dim_ref, int64_t factor) {
  const Dimension dim = ops::dim_of("compress_mean", x, dim_ref);
  if (factor < 1 || dim.size % factor != 0) {
    throw ValueError(
        detail::str_cat("compress_mean: factor ", factor, " must divide ", dim.to_string()));
  }
  const Dimension compressed{dim.name, dim.size / factor}, group{"compression_factor", factor};
  return reduce_mean(replace_dimensions(x, {dim}, {compressed, group}),
                     replace_dimensions(x.shape(), {dim}, {compressed}));
}

Tensor multihead_self_attention_memory_compressed(const Tensor& x, bool mask_right,
                                                  int64_t compression_factor, const Dimension& kv,
                                                  const Dimension& heads, const std::string& name,
                                                  float keep_prob) {
  const std::string what = "multihead_self_attention_memory_compressed \"" + name + "\"";
  const OriginScope origin = ops::made_by(what, x);
  const SequenceDims d = sequence_dims(x, what);
  const Mesh& mesh = x.mesh();
  const AttentionParams w = attention_params(mesh, d.io, heads, kv, name, variable_dtype_for(x));
  const Tensor memory = rename_dimension(compress_mean(x, d.length, compression_factor),
                                         d.length.name, "memory_" + d.length.name);
  const Dimension ml{"memory_" + d.length.name, d.length.size / compression_factor};
  const Tensor q = einsum({x, w.q}, concat_shapes(d.batch, {heads, d.length, kv}));
  const Tensor k = einsum({memory, w.k}, concat_shapes(d.batch, {heads, ml, kv}));
  const Tensor v = einsum({memory, w.v}, concat_shapes(d.batch, {heads, ml, kv}));
  Tensor mask;
  if (mask_right) {
    // A group is visible once its last position is.
    const Tensor group_end = range(mesh, ml, float32) * static_cast<float>(compression_factor) +
                             static_cast<float>(compression_factor - 1);
    mask = cast(greater(group_end, positions(mesh, d.length)), float32) * -1e9f;
  }
  const Tensor o =
      attend(q, k, v, mask, kv, ml, constant(mesh, 0.0f, Shape(), x.dtype()), keep_prob);
  return einsum({o, w.o}, x.shape());
}

}  // namespace mtf::layers
