// Reductions over named dimensions, softmax family, top_k and the softmax
// cross-entropy loss. mean, logsumexp, softmax and the loss are compositions
// of primitive ops, so their gradients follow from the primitives' (but
// bfloat16 softmax's, written by hand so that it keeps only its result).
#include <cmath>
#include <limits>
#include <memory>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

using kernels::ReduceFn;

using kernels::reduce_name;

class ReductionOp : public Operation {
 public:
  ReductionOp(ReduceFn fn, const Tensor& x, const Shape& out_shape)
      : Operation(x.mesh(), reduce_name(fn), {x}, ""), fn_(fn) {
    ops::reject_bool(type(), x);
    for (const Dimension& d : out_shape) {
      int i = x.shape().index_of(d.name);
      if (i < 0 || x.shape()[i].size != d.size) {
        throw ShapeError(detail::str_cat(type(), ": output dimension ", d.to_string(),
                                         " is not a dimension of input ", x.describe(),
                                         "; a reduction's output keeps a subset of its input's "
                                         "dimensions"));
      }
    }
    add_output(out_shape, x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    kernels::reduce(fn_, ctx.input(0), ctx.allocate_output(0), ctx.state().reproducible);
  }
  // The kernel reads bfloat16 and sums in float32 (no widened copy).
  bool computes_bfloat16() const override { return true; }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& x = inputs()[0];
    Tensor dy = broadcast(g[0], x.shape());
    if (fn_ == ReduceFn::kSum) return {dy};
    // max/min: the gradient goes to every element equal to the extreme.
    Tensor mask = equal(x, broadcast(output(0), x.shape()));
    return {where(mask, dy, ops::scalar_like(dy, 0.0f))};
  }
  double flops() const override { return static_cast<double>(inputs()[0].shape().num_elements()); }
  std::vector<std::string> reduced_dims() const override {
    return inputs()[0].shape().minus(output(0).shape()).names();
  }
  ReduceFn fn() const { return fn_; }
  mtf::ReduceOp reduction() const override {
    return fn_ == ReduceFn::kSum
               ? mtf::ReduceOp::kSum
               : (fn_ == ReduceFn::kMax ? mtf::ReduceOp::kMax : mtf::ReduceOp::kMin);
  }

 private:
  ReduceFn fn_;
};

}  // namespace

namespace ops {

bool as_reduction(const Operation& op, kernels::ReduceFn* fn) {
  const auto* r = dynamic_cast<const ReductionOp*>(&op);
  if (!r || r->output(0).dtype() != float32) return false;
  *fn = r->fn();
  return true;
}

}  // namespace ops

namespace {

Tensor reduce(ReduceFn fn, const Tensor& x, const Shape& out) {
  if (!x.valid()) throw ValueError(std::string(reduce_name(fn)) + ": invalid input tensor");
  if (out == x.shape()) return x;
  return x.graph().add<ReductionOp>(fn, x, out)->output(0);
}

class TopKOp : public Operation {
 public:
  TopKOp(const Tensor& x, const DimRef& reduced, const Dimension& k_dim)
      : Operation(x.mesh(), "top_k", {x}, ""),
        axis_(x.shape().index_of(ops::dim_of("top_k", x, reduced).name)) {
    if (k_dim.size > x.shape()[axis_].size || k_dim.size < 0) {
      throw ValueError(detail::str_cat("top_k: k = ", k_dim.size, " (dimension \"", k_dim.name,
                                       "\") exceeds the size ", x.shape()[axis_].size,
                                       " of reduced dimension \"", reduced.name(), "\" of ",
                                       x.describe()));
    }
    std::vector<Dimension> dims = x.shape().dims();
    dims[axis_] = k_dim;
    add_output(Shape(dims), x.dtype());
    add_output(Shape(dims), int32);
  }
  void compute(KernelContext& ctx) const override {
    HostTensor& v = ctx.allocate_output(0);
    kernels::top_k(ctx.input(0), axis_, v, ctx.allocate_output(1));
  }
  bool differentiable() const override { return is_floating(inputs()[0].dtype()); }
  std::vector<std::string> unsplittable_dims() const override {
    return {inputs()[0].shape()[axis_].name, output(0).shape()[axis_].name};
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    if (!g[0].valid()) return {Tensor()};
    const Tensor& x = inputs()[0];
    const Dimension& reduced = x.shape()[axis_];
    return {einsum({one_hot(output(1), reduced, 1.0f, 0.0f, g[0].dtype()), g[0]}, x.shape())};
  }

 private:
  int axis_;
};

}  // namespace

ReduceSpec::ReduceSpec(const std::string& shape_or_name) {
  if (shape_or_name.empty() || shape_or_name.find(':') != std::string::npos) {
    shape_ = Shape(shape_or_name);
  } else {
    dim_ = DimRef(shape_or_name);
  }
}

Shape ReduceSpec::output_for(const char* op, const Tensor& x) const {
  if (shape_) return *shape_;
  return x.shape().minus(Shape({ops::dim_of(op, x, *dim_)}));
}

Tensor reduce_sum(const Tensor& x, const ReduceSpec& s) {
  return reduce(ReduceFn::kSum, x, s.output_for("reduce_sum", x));
}
Tensor reduce_sum(const Tensor& x) { return reduce(ReduceFn::kSum, x, Shape()); }
Tensor reduce_max(const Tensor& x, const ReduceSpec& s) {
  return reduce(ReduceFn::kMax, x, s.output_for("reduce_max", x));
}
Tensor reduce_max(const Tensor& x) { return reduce(ReduceFn::kMax, x, Shape()); }
Tensor reduce_min(const Tensor& x, const ReduceSpec& s) {
  return reduce(ReduceFn::kMin, x, s.output_for("reduce_min", x));
}
Tensor reduce_min(const Tensor& x) { return reduce(ReduceFn::kMin, x, Shape()); }

Tensor reduce_mean(const Tensor& x, const ReduceSpec& spec) {
  const OriginScope origin = ops::made_by("reduce_mean", x);
  ops::require_float("reduce_mean", x);
  if (x.dtype() == bfloat16)
    return ops::in_float32(x, [&](const Tensor& f) { return reduce_mean(f, spec); });
  const Shape s = spec.output_for("reduce_mean", x);
  const double n = static_cast<double>(x.shape().num_elements()) /
                   static_cast<double>(std::max<int64_t>(s.num_elements(), 1));
  Tensor sum = reduce_sum(x, s);
  if (x.shape().num_elements() == 0 || s.num_elements() == 0) return sum / 0.0f;
  return sum * static_cast<float>(1.0 / n);
}
Tensor reduce_mean(const Tensor& x) { return reduce_mean(x, Shape()); }

Tensor reduce_logsumexp(const Tensor& x, const ReduceSpec& spec) {
  const OriginScope origin = ops::made_by("reduce_logsumexp", x);
  ops::require_float("reduce_logsumexp", x);
  if (x.dtype() == bfloat16)
    return ops::in_float32(x, [&](const Tensor& f) { return reduce_logsumexp(f, spec); });
  const Shape s = spec.output_for("reduce_logsumexp", x);
  // max + log(sum(exp(x - max))), with the max held constant for the gradient.
  Tensor m = stop_gradient(reduce_max(x, s));
  return log(reduce_sum(exp(x - m), s)) + m;
}

Tensor log_softmax(const Tensor& x, const DimRef& d) {
  const OriginScope origin = ops::made_by("log_softmax", x);
  if (x.dtype() == bfloat16)
    return ops::in_float32(x, [&](const Tensor& f) { return log_softmax(f, d); });
  return x - reduce_logsumexp(x, ops::dim_of("log_softmax", x, d));
}
Tensor softmax(const Tensor& x, const DimRef& d) {
  const OriginScope origin = ops::made_by("softmax", x);
  if (x.dtype() == bfloat16) {
    // Mesh TensorFlow's way: the elementwise steps in bfloat16 (each
    // computed in float32 and rounded), the sum in float32.
    // The gradient, y * (dy - sum(dy * y)), reads only y: the
    // exponentials are not kept for the backward pass.
    const Dimension dim = ops::dim_of("softmax", x, d);
    const Tensor xs = stop_gradient(x);
    const Tensor e = exp(xs - reduce_max(xs, dim));
    const Tensor y = e * cast(reciprocal(reduce_sum(cast(e, float32), dim)), bfloat16);
    // The same steps as one kernel where the lowering finds the dimension
    // whole (its rows pass).
    ops::record_softmax_rows(xs, y, dim);
    // The gradient reads the result itself (the tensor later ops keep too).
    auto result = std::make_shared<Tensor>();
    *result = ops::with_gradient(x, y, [result, dim](const Tensor& dy) {
      const Tensor& out = *result;
      const Tensor dx = out * (dy - cast(reduce_sum(cast(dy * out, float32), dim), bfloat16));
      ops::record_softmax_gradient_rows(dy, out, dx, dim);
      return dx;
    });
    return *result;
  }
  return exp(log_softmax(x, ops::dim_of("softmax", x, d)));
}

std::pair<Tensor, Tensor> top_k(const Tensor& x, const DimRef& reduced_dim,
                                const Dimension& k_dim) {
  auto* op = x.graph().add<TopKOp>(x, reduced_dim, k_dim);
  return {op->output(0), op->output(1)};
}

Tensor nth_largest_element(const Tensor& x, int64_t n, const DimRef& reduced_dim) {
  const OriginScope origin = ops::made_by("nth_largest_element", x);
  if (!x.valid()) throw ValueError("nth_largest_element: x is an invalid mtf::Tensor");
  const int axis = x.shape().index_of(ops::dim_of("nth_largest_element", x, reduced_dim).name);
  const int64_t size = x.shape()[axis].size;
  if (n < 0 || n >= size) {
    throw ValueError(detail::str_cat("nth_largest_element: n = ", n, " is outside [0, ", size,
                                     ") for dimension ", x.shape()[axis].to_string(), " of ",
                                     x.describe()));
  }
  // The top n + 1 values, then the last of them (max over one element keeps
  // its bits, a -0 included).
  const std::string k_name = "_top_k_";  // as Mesh TensorFlow names it
  if (x.shape().contains(k_name))
    throw ShapeError("nth_largest_element: " + x.describe() + " has a dimension \"_top_k_\"");
  const Dimension k_dim{k_name, n + 1};
  Tensor values = top_k(x, x.shape()[axis], k_dim).first;
  return reduce_max(slice(values, n, 1, k_name), Dimension{k_name, 1});
}

Tensor nth_smallest_element(const Tensor& x, int64_t n, const DimRef& reduced_dim) {
  const OriginScope origin = ops::made_by("nth_smallest_element", x);
  return -nth_largest_element(-x, n, reduced_dim);
}

Tensor weights_nonzero(const Tensor& x, DType dtype) {
  if (!x.valid()) throw ValueError("weights_nonzero: x is an invalid mtf::Tensor");
  return cast(not_equal(x, ops::scalar_like(x, 0.0f)), dtype);
}

Tensor softmax_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                         const DimRef& vocab_ref, float z_loss) {
  const OriginScope origin = ops::made_by("softmax_cross_entropy_with_logits", logits);
  ops::require_float("softmax_cross_entropy_with_logits", logits);
  ops::check_consistent_sizes("softmax_cross_entropy_with_logits", {logits, targets});
  if (targets.valid() && targets.dtype() == int32) {
    // Class ids (Mesh TensorFlow takes them too): their one-hot rows.
    const Dimension vocab = ops::dim_of("softmax_cross_entropy_with_logits", logits, vocab_ref);
    if (!targets.shape().same_dims_as(logits.shape().minus(Shape({vocab})))) {
      throw ShapeError("softmax_cross_entropy_with_logits: int32 targets " + targets.describe() +
                       " must have the dimensions of logits " + logits.describe() + " without " +
                       vocab.to_string() +
                       " (class ids), or logits' own "
                       "(probabilities)");
    }
    return softmax_cross_entropy_with_logits(logits, one_hot(targets, vocab, 1.0f, 0.0f, float32),
                                             vocab_ref, z_loss);
  }
  if (logits.dtype() == bfloat16) {
    const Tensor t = targets.dtype() == bfloat16 ? cast(targets, float32) : targets;
    return ops::in_float32(logits, [&](const Tensor& f) {
      return softmax_cross_entropy_with_logits(f, t, vocab_ref, z_loss);
    });
  }
  const Dimension vocab_dim = ops::dim_of("softmax_cross_entropy_with_logits", logits, vocab_ref);
  ops::dim_of("softmax_cross_entropy_with_logits", targets, vocab_ref);
  Tensor lse = reduce_logsumexp(logits, vocab_dim);
  Tensor loss = -reduce_sum((logits - lse) * targets, vocab_dim);
  if (z_loss > 0.0f) loss = loss + z_loss * square(lse);
  return loss;
}

Tensor reduce_logsumexp(const Tensor& x, const DimRef& d, const Tensor& extra_logit) {
  const OriginScope origin = ops::made_by("reduce_logsumexp", x);
  ops::require_float("reduce_logsumexp", x);
  if (!extra_logit.valid()) return reduce_logsumexp(x, ReduceSpec(d));
  const Dimension dim = ops::dim_of("reduce_logsumexp", x, d);
  const Shape kept = x.shape().minus(Shape({dim}));
  if (!extra_logit.shape().is_subset_of(kept)) {
    throw ShapeError("reduce_logsumexp: extra_logit " + extra_logit.describe() +
                     " must be a scalar or have dimensions of " + kept.to_string() +
                     " (x without " + dim.to_string() + ")");
  }
  ops::require_float("reduce_logsumexp (extra_logit)", extra_logit);
  if (x.dtype() == bfloat16 || extra_logit.dtype() == bfloat16) {
    const Tensor e = cast(extra_logit, float32);
    return ops::in_float32(x, [&](const Tensor& f) { return reduce_logsumexp(f, dim, e); });
  }
  // As without the extra logit, its exp added to the sum; the max (which
  // counts it) held constant for the gradient.
  const Tensor extra = stop_gradient(extra_logit);
  const Tensor m = stop_gradient(maximum(reduce_max(x, kept), extra, &kept));
  return log(reduce_sum(exp(x - m), kept) + exp(extra - m)) + m;
}

Tensor log_softmax(const Tensor& x, const DimRef& d, const Tensor& extra_logit) {
  const OriginScope origin = ops::made_by("log_softmax", x);
  if (!extra_logit.valid()) return log_softmax(x, d);
  if (x.dtype() == bfloat16)
    return ops::in_float32(x, [&](const Tensor& f) { return log_softmax(f, d, extra_logit); });
  return x - reduce_logsumexp(x, d, extra_logit);
}

Tensor softmax(const Tensor& x, const DimRef& d, const Tensor& extra_logit) {
  const OriginScope origin = ops::made_by("softmax", x);
  if (!extra_logit.valid()) return softmax(x, d);
  if (x.dtype() == bfloat16)
    return ops::in_float32(x, [&](const Tensor& f) { return softmax(f, d, extra_logit); });
  return exp(log_softmax(x, d, extra_logit));
}

std::pair<Tensor, Tensor> top_1(const Tensor& x, const DimRef& reduced_dim, DType dtype) {
  const OriginScope origin = ops::made_by("top_1", x);
  if (dtype != int32 && dtype != float32)
    throw DTypeError(std::string("top_1: the index dtype must be int32 or float32, not ") +
                     dtype_name(dtype));
  const Dimension dim = ops::dim_of("top_1", x, reduced_dim);
  const Tensor max_value = reduce_max(x, dim);
  // The positions holding the max, the largest of them: a max reduction,
  // so a split reduced_dim costs one allreduce.
  const Tensor is_max = cast(equal(x, max_value), float32);
  const Tensor index = reduce_max(is_max * range(x.mesh(), dim, float32), dim);
  return {dtype == float32 ? index : cast(index, dtype), max_value};
}

Tensor sample_with_temperature(const Tensor& logits, const DimRef& d, float temperature,
                               uint64_t seed) {
  const OriginScope origin = ops::made_by("sample_with_temperature", logits);
  ops::require_float("sample_with_temperature", logits);
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    throw ValueError(detail::str_cat("sample_with_temperature: temperature ", temperature,
                                     " must be finite and >= 0 (0: the most likely index)"));
  }
  const Dimension dim = ops::dim_of("sample_with_temperature", logits, d);
  Tensor scores = logits.dtype() == float32 ? logits : cast(logits, float32);
  if (temperature != 0.0f) {
    // Gumbel noise -log(-log(u)), u in [1e-9, 1) so neither log sees 0.
    const Tensor u = random_uniform(logits.mesh(), logits.shape(), 1e-9f, 1.0f, seed);
    scores = scores + temperature * -log(-log(u));
  }
  return top_1(stop_gradient(scores), dim).first;
}

Tensor reduce_first(const Tensor& x, const Shape& output_shape) {
  const OriginScope origin = ops::made_by("reduce_first", x);
  if (!output_shape.is_subset_of(x.shape())) {
    throw ShapeError("reduce_first: output shape " + output_shape.to_string() + " has dimensions " +
                     x.describe() + " lacks");
  }
  // A gather of index 0 along each reduced dimension: on a split dimension
  // the processor holding index 0 gives it (a slice would leave a size-1
  // dimension that a layout splitting it cannot hold).
  Tensor first = x;
  const Tensor zero = constant(x.mesh(), 0.0f, Shape(), int32);
  for (const Dimension& d : x.shape())
    if (!output_shape.contains(d.name)) first = gather(first, zero, d.name);
  return first.shape() == output_shape ? first : transpose(first, output_shape);
}

}  // namespace mtf
