// A mixture-of-experts feed-forward layer with top-2 gating, after Mesh
// TensorFlow's moe.py (transformer_moe_layer_v1 with _top_2_gating); see
// include/mtf/layers.h.
#include <cmath>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {
namespace {

// The index along `dim` of t's largest value (ties: the lowest index), as
// int32 without that dimension; and that value.
std::pair<Tensor, Tensor> argmax(const Tensor& t, const Dimension& dim) {
  const Dimension one{"_top_1_", 1};
  auto [value, index] = top_k(t, dim, one);
  const Shape rest = t.shape().minus(Shape({dim}));
  return {reshape(index, rest), reshape(value, rest)};
}

}  // namespace

MoeOutput moe(const Tensor& x, const DimRef& group, const std::string& name,
              const MoeOptions& options) {
  const OriginScope origin = ops::made_by("layers::moe \"" + name + "\"", x);
  ops::require_float("moe", x);
  if (x.shape().ndims() < 2)
    throw ShapeError("moe \"" + name + "\": input " + x.describe() + " needs [..., group, model]");
  const Dimension s = ops::dim_of("moe \"" + name + "\"", x, group);
  const Dimension m = x.shape()[x.shape().ndims() - 1];
  const Dimension& e = options.experts;
  if (s == m) throw ShapeError("moe \"" + name + "\": the group dimension is the model dimension");
  if (e.size < 2 || options.hidden.size < 1 || !(options.capacity_factor > 0)) {
    throw ValueError(detail::str_cat("moe \"", name, "\": needs at least 2 experts (got ",
                                     e.to_string(),
                                     "), a hidden size >= 1 and a capacity "
                                     "factor > 0"));
  }
  for (const Dimension& d : {e, options.hidden}) {
    if (x.shape().contains(d.name)) {
      throw ShapeError("moe \"" + name + "\": input " + x.describe() +
                       " already has a dimension \"" + d.name + "\"");
    }
  }
  // Each expert takes at most `capacity` tokens of a group, top-2 choices
  // included; the rest of its choices are dropped (their output is zero).
  const int64_t capacity = std::max<int64_t>(
      1, std::min<int64_t>(s.size, static_cast<int64_t>(std::ceil(s.size * options.capacity_factor /
                                                                  double(e.size)))));
  const Dimension c{"expert_capacity", capacity};
  const Shape groups = x.shape().minus(Shape({s, m}));  // [batch...]
  // The gating and the combine see the experts as "<experts>_unsplit", the
  // experts' own computation the groups as "<group>_unsplit" (Mesh
  // TensorFlow's renaming): with the experts and the groups split over the
  // same mesh axis, the reshapes between the two are alltoalls.
  const Dimension eu{e.name + "_unsplit", e.size};
  std::vector<Dimension> unsplit_groups;
  for (const Dimension& d : groups) unsplit_groups.push_back({d.name + "_unsplit", d.size});
  const Shape groups_u(unsplit_groups);

  // Gating: softmax over the experts of a learned projection, in float32
  // whatever x's dtype (as Mesh TensorFlow routes), so that bfloat16
  // activations do not move tokens between experts.
  const Tensor x32 = x.dtype() == float32 ? x : cast(x, float32);
  const Tensor w_gate =
      get_or_create_variable(x.mesh(), name + "/gate", Shape({m, eu}), variance_scaling({m}));
  const Tensor raw =
      softmax(einsum({x32, w_gate}, x.shape().minus(Shape({m})).union_with(Shape({eu}))), eu);
  auto [index_1, gate_1] = argmax(raw, eu);
  Tensor mask_1 = one_hot(index_1, eu);
  auto [index_2, gate_2] = argmax(raw * (1.0f - mask_1), eu);
  Tensor mask_2 = one_hot(index_2, eu);
  const Tensor denom = gate_1 + gate_2 + 1e-9f;
  gate_1 = gate_1 / denom;
  gate_2 = gate_2 / denom;

  // Load balancing (Shazeer et al.): the mean over experts of the fraction
  // of first choices times the mean gate, scaled so that a uniform router
  // scores 1.
  const Tensor density = reduce_mean(mask_1, s), density_proxy = reduce_mean(raw, s);
  const Tensor loss = reduce_mean(density * density_proxy) * float(eu.size * eu.size);

  // Positions in each expert's buffer, first choices before second ones.
  Tensor position_1 = cumsum(mask_1, s, /*exclusive=*/true) * mask_1;
  mask_1 = mask_1 * cast(less(position_1, constant(x.mesh(), float(capacity), Shape())), float32);
  const Tensor count_1 = reduce_sum(mask_1, s);  // [groups..., eu]
  const Tensor kept_1 = reduce_sum(mask_1, eu);  // [groups..., s]
  position_1 = reduce_sum(position_1 * mask_1, eu);
  Tensor position_2 = (cumsum(mask_2, s, true) + count_1) * mask_2;
  mask_2 = mask_2 * cast(less(position_2, constant(x.mesh(), float(capacity), Shape())), float32);
  const Tensor kept_2 = reduce_sum(mask_2, eu);
  position_2 = reduce_sum(position_2 * mask_2, eu);
  // combine [groups..., s, eu, c]: the weight of expert eu's slot c in token
  // s's output; dispatch: 1 where it is nonzero.
  const Tensor combine32 =
      gate_1 * kept_1 * one_hot(index_1, eu) * one_hot(cast(position_1, int32), c) +
      gate_2 * kept_2 * one_hot(index_2, eu) * one_hot(cast(position_2, int32), c);
  const Tensor dispatch =
      stop_gradient(cast(greater(combine32, zeros(x.mesh(), Shape())), x.dtype()));
  const Tensor combine = x.dtype() == float32 ? combine32 : cast(combine32, x.dtype());

  // The experts: one dense-relu-dense each, on their slots.
  const Shape slots_u = Shape({eu}).union_with(groups).union_with(Shape({c, m}));
  const Shape slots = Shape({e}).union_with(groups_u).union_with(Shape({c}));
  const Tensor expert_in = reshape(einsum({x, dispatch}, slots_u), slots.union_with(Shape({m})));
  const VariableDType vd = variable_dtype_for(x);
  const Tensor wi = get_or_create_variable(x.mesh(), name + "/wi", Shape({e, m, options.hidden}),
                                           variance_scaling({m}), vd);
  const Tensor wo = get_or_create_variable(x.mesh(), name + "/wo", Shape({e, options.hidden, m}),
                                           variance_scaling({options.hidden}), vd);
  const Tensor h = relu(einsum({expert_in, wi}, slots.union_with(Shape({options.hidden}))));
  const Tensor expert_out = einsum({h, wo}, slots.union_with(Shape({m})));
  const Tensor y = einsum({reshape(expert_out, slots_u), combine}, x.shape());
  return {y, loss * options.loss_coef};
}

}  // namespace mtf::layers
