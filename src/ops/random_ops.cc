// Random ops, counter-based: a value depends on the seed, the Session's run
// counter and the element's logical index only. dropout is a composition.
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"
#include "ops/seed.h"

namespace mtf {
namespace {

class RandomOp : public Operation {
 public:
  RandomOp(const Mesh& mesh, const Shape& shape, bool normal, float a, float b, uint64_t seed)
      : Operation(mesh, normal ? "random_normal" : "random_uniform", {}, ""),
        normal_(normal),
        a_(a),
        b_(b) {
    const uint64_t replayed = mesh.graph().take_random_seed();
    seed_ = replayed ? replayed : seed ? seed : ops::derive_seed(mesh.graph().seed(), name());
    add_output(shape, float32);
  }
  void compute(KernelContext& ctx) const override {
    HostTensor& out = ctx.allocate_output(0);
    const uint64_t run = ctx.state().run_counter;
    if (normal_) {
      kernels::random_normal(seed_, run, output(0).shape(), ctx.output_slice_offset(0), a_, b_,
                             false, out);
    } else {
      kernels::random_uniform(seed_, run, output(0).shape(), ctx.output_slice_offset(0), a_, b_,
                              out);
    }
  }
  bool differentiable() const override { return false; }
  uint64_t seed() const { return seed_; }

 private:
  bool normal_;
  float a_, b_;
  uint64_t seed_;
};

}  // namespace

uint64_t ops::random_seed_of(const Operation& op) {
  const auto* r = dynamic_cast<const RandomOp*>(&op);
  return r ? r->seed() : 0;
}

Tensor random_uniform(const Mesh& mesh, const Shape& shape, float minval, float maxval,
                      uint64_t seed) {
  return mesh.graph().add<RandomOp>(mesh, shape, false, minval, maxval, seed)->output(0);
}

Tensor random_normal(const Mesh& mesh, const Shape& shape, float mean, float stddev,
                     uint64_t seed) {
  return mesh.graph().add<RandomOp>(mesh, shape, true, mean, stddev, seed)->output(0);
}

Tensor dropout(const Tensor& x, float keep_prob, uint64_t seed, const Shape* noise_shape) {
  const OriginScope origin = ops::made_by("dropout", x);
  ops::require_float("dropout", x);
  if (!(keep_prob > 0.0f && keep_prob <= 1.0f)) {
    throw ValueError(detail::str_cat("dropout: keep_prob ", keep_prob, " for ", x.describe(),
                                     " must be in (0, 1]"));
  }
  if (keep_prob == 1.0f) return x;
  const Shape shape = noise_shape ? *noise_shape : x.shape();
  if (!shape.is_subset_of(x.shape())) {
    throw ShapeError(detail::str_cat("dropout: noise shape ", shape.to_string(),
                                     " has dimensions that ", x.describe(), " lacks"));
  }
  Tensor u = random_uniform(x.mesh(), shape, 0.0f, 1.0f, seed);
  // The mask in x's dtype (1 / keep_prob rounded to bfloat16 for bfloat16 x,
  // as Mesh TensorFlow's dropout in bfloat16 does).
  Tensor mask = cast(less(u, ops::scalar_like(u, keep_prob)), x.dtype()) * (1.0f / keep_prob);
  return x * mask;
}

}  // namespace mtf
