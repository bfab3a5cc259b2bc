// Ops that change a tensor's shape or move data along one dimension:
// reshape, rename_dimension, slice, pad, concat, shift, stack, unstack;
// split is a composition of slices.
#include <algorithm>
#include <cstring>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

class ReshapeOp : public Operation {
 public:
  ReshapeOp(const Tensor& x, const Shape& shape, const std::string& name)
      : Operation(x.mesh(), "reshape", {x}, name) {
    if (shape.num_elements() != x.shape().num_elements()) {
      throw ShapeError(detail::str_cat(
          "reshape \"", this->name(), "\": cannot reshape ", x.describe(), " (",
          x.shape().num_elements(), " elements) to ", shape.to_string(), " (", shape.num_elements(),
          " elements); a reshape must keep the element count"));
    }
    add_output(shape, x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).reshaped(ctx.output_slice_shape(0)));
  }
  bool computes_bfloat16() const override { return true; }  // a view of the input
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    return {reshape(g[0], inputs()[0].shape())};
  }
  double flops() const override { return 0; }
  // A dimension may stay split only if it keeps its name and size and the
  // dimensions before it hold as many elements in the input as in the
  // output: then every processor's row-major block maps onto its own block.
  std::vector<std::string> unsplittable_dims() const override {
    const Shape& in = inputs()[0].shape();
    const Shape& out = output(0).shape();
    auto prefix = [](const Shape& s, int axis) {
      int64_t p = 1;
      for (int i = 0; i < axis; ++i) p *= s[i].size;
      return p;
    };
    std::vector<std::string> r;
    for (const Shape* s : {&in, &out}) {
      for (int i = 0; i < s->ndims(); ++i) {
        const Dimension& d = (*s)[i];
        const int ii = in.index_of(d.name), oi = out.index_of(d.name);
        const bool keeps =
            ii >= 0 && oi >= 0 && in[ii].size == out[oi].size && prefix(in, ii) == prefix(out, oi);
        if (!keeps && std::find(r.begin(), r.end(), d.name) == r.end()) r.push_back(d.name);
      }
    }
    return r;
  }
};

// slice / pad / shift: same dimensions, one of them moved or resized.
class AxisOp : public Operation {
 public:
  enum class Kind { kSlice, kPad, kShift };
  AxisOp(Kind kind, const Tensor& x, const std::string& dim, int64_t a, int64_t b, bool wrap)
      : Operation(x.mesh(), kind_name(kind), {x}, ""), kind_(kind), a_(a), b_(b), wrap_(wrap) {
    axis_ = ops::axis_of(type(), x, dim);
    const int64_t n = x.shape()[axis_].size;
    Shape out = x.shape();
    if (kind == Kind::kSlice) {
      if (a < 0 || b < 0 || a + b > n) {
        throw ValueError(detail::str_cat("slice: begin ", a, " size ", b, " is outside dimension ",
                                         x.shape()[axis_].to_string(), " of ", x.describe()));
      }
      out = out.resize(dim, b);
    } else if (kind == Kind::kPad) {
      if (a < 0 || b < 0) {
        throw ValueError(detail::str_cat("pad: paddings (", a, ", ", b, ") of dimension \"", dim,
                                         "\" of ", x.describe(), " must be non-negative"));
      }
      out = out.resize(dim, n + a + b);
    }
    add_output(out, x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    HostTensor& out = ctx.allocate_output(0);
    switch (kind_) {
      case Kind::kSlice:
        return kernels::slice(ctx.input(0), axis_, a_, out);
      case Kind::kPad:
        return kernels::pad(ctx.input(0), axis_, a_, out);
      case Kind::kShift:
        if (reads_window(ctx)) {  // the window is the output slice
          std::memcpy(out.raw_data(), ctx.input(0).raw_data(), out.num_bytes());
          return;
        }
        return kernels::shift(ctx.input(0), axis_, a_, wrap_, out);
    }
  }
  // A shift on a split dimension reads, for each output block, the input
  // rows offset before it: a halo exchange brings them (zeros past the ends,
  // or with wrap-around the rows at the other end, as Mesh TensorFlow passes
  // blocks to the neighbouring processors), where gathering the dimension
  // would bring all.
  bool input_window(int input, const std::string& dim, int64_t position, int64_t parts,
                    int64_t* begin, int64_t* end) const override {
    if (kind_ != Kind::kShift || input != 0 || dim != inputs()[0].shape()[axis_].name) return false;
    const int64_t block = inputs()[0].shape()[axis_].size / parts;
    *begin = position * block - window_offset();
    *end = *begin + block;
    return true;
  }
  bool input_window_wraps(int /*input*/) const override { return kind_ == Kind::kShift && wrap_; }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& x = inputs()[0];
    const Dimension& d = x.shape()[axis_];
    switch (kind_) {
      case Kind::kSlice:
        return {pad(g[0], a_, d.size - a_ - b_, d.name)};
      case Kind::kPad:
        return {slice(g[0], a_, d.size, d.name)};
      case Kind::kShift:
        return {shift(g[0], -a_, d, wrap_)};
    }
    return {};
  }
  double flops() const override { return 0; }
  std::vector<std::string> unsplittable_dims() const override {
    if (kind_ == Kind::kShift) return {};  // read through windows
    return {inputs()[0].shape()[axis_].name};
  }

 private:
  // True when input 0 is the window input_window() asked for: the output
  // slice's rows, offset (the dimension is split).
  bool reads_window(const KernelContext& ctx) const {
    const HostTensor& in = ctx.input(0);
    return in.shape()[axis_].size == ctx.output_slice_shape(0)[axis_].size &&
           in.shape()[axis_].size < inputs()[0].shape()[axis_].size &&
           ctx.input_slice_offset(0)[axis_] == ctx.output_slice_offset(0)[axis_] - window_offset();
  }
  // How far a shift's window lies before its output block: the offset, taken
  // into [0, size) with wrap-around.
  int64_t window_offset() const {
    const int64_t n = inputs()[0].shape()[axis_].size;
    return wrap_ ? ((a_ % n) + n) % n : a_;
  }
  static const char* kind_name(Kind k) {
    return k == Kind::kSlice ? "slice" : (k == Kind::kPad ? "pad" : "shift");
  }
  Kind kind_;
  int axis_ = 0;
  int64_t a_, b_;
  bool wrap_;
};

class ConcatOp : public Operation {
 public:
  ConcatOp(const std::vector<Tensor>& xs, const std::string& dim, const Shape& out)
      : Operation(xs.at(0).mesh(), "concat", xs, ""), axis_(out.index_of(dim)) {
    add_output(out, xs[0].dtype());
  }
  void compute(KernelContext& ctx) const override {
    std::vector<const HostTensor*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i) ins.push_back(&ctx.input(i));
    kernels::concat(ins, axis_, ctx.allocate_output(0));
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    std::vector<Tensor> grads;
    const std::string& dim = output(0).shape()[axis_].name;
    int64_t at = 0;
    for (const Tensor& x : inputs()) {
      const int64_t n = x.shape().get(dim).size;
      grads.push_back(slice(g[0], at, n, dim));
      at += n;
    }
    return grads;
  }
  double flops() const override { return 0; }
  std::vector<std::string> unsplittable_dims() const override {
    return {output(0).shape()[axis_].name};
  }

 private:
  int axis_;
};

// stack: a new dimension whose index i holds input i. When a layout splits
// the new dimension, each processor stacks only the inputs its slice of it
// holds: no communication (the inputs are whole along it: they lack it).
class StackOp : public Operation {
 public:
  StackOp(const std::vector<Tensor>& xs, const Shape& out, int axis)
      : Operation(xs.at(0).mesh(), "stack", xs, ""), axis_(axis) {
    add_output(out, xs[0].dtype());
  }
  void compute(KernelContext& ctx) const override {
    HostTensor& out = ctx.allocate_output(0);
    const Shape& slice = ctx.output_slice_shape(0);
    const int64_t begin = ctx.output_slice_offset(0)[axis_];
    const Shape one = slice.resize(slice[axis_].name, 1);
    std::vector<HostTensor> parts;
    for (int64_t i = 0; i < slice[axis_].size; ++i)
      parts.push_back(ctx.input(static_cast<int>(begin + i)).reshaped(one));
    std::vector<const HostTensor*> ptrs;
    for (const HostTensor& t : parts) ptrs.push_back(&t);
    kernels::concat(ptrs, axis_, out);
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    return unstack(g[0], output(0).shape()[axis_]);
  }
  double flops() const override { return 0; }

 private:
  int axis_;
};

// unstack: output i is index i of one dimension. A split dimension is
// gathered first (no output has it), then each processor slices locally.
class UnstackOp : public Operation {
 public:
  UnstackOp(const Tensor& x, int axis) : Operation(x.mesh(), "unstack", {x}, ""), axis_(axis) {
    const Shape rest = x.shape().minus(Shape({x.shape()[axis]}));
    for (int64_t i = 0; i < x.shape()[axis].size; ++i) add_output(rest, x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    const HostTensor& x = ctx.input(0);
    const Shape one = x.shape().resize(x.shape()[axis_].name, 1);
    for (int i = 0; i < num_outputs(); ++i) {
      HostTensor piece(one, x.dtype());
      kernels::slice(x, axis_, i, piece);
      ctx.set_output(i, piece.reshaped(ctx.output_slice_shape(i)));
    }
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    std::vector<Tensor> parts;
    for (int i = 0; i < num_outputs(); ++i)
      parts.push_back(g[i].valid() ? g[i] : zeros(mesh(), output(i).shape(), output(i).dtype()));
    const Dimension& d = inputs()[0].shape()[axis_];
    return {transpose(stack(parts, d.name, axis_), inputs()[0].shape())};
  }
  double flops() const override { return 0; }

 private:
  int axis_;
};

}  // namespace

Tensor reshape(const Tensor& x, const Shape& new_shape, const std::string& name) {
  if (x.shape() == new_shape) return x;
  return x.graph().add<ReshapeOp>(x, new_shape, name)->output(0);
}

Shape replace_dimensions(const Shape& shape, const std::vector<Dimension>& old_dims,
                         const std::vector<Dimension>& new_dims) {
  if (old_dims.empty() || new_dims.empty())
    throw ValueError("replace_dimensions: old and new dimensions must not be empty");
  const int first = shape.index_of(old_dims[0].name);
  bool run = first >= 0;
  for (size_t k = 0; run && k < old_dims.size(); ++k)
    run = first + static_cast<int>(k) < shape.ndims() && shape[first + k] == old_dims[k];
  if (!run) {
    throw ShapeError("replace_dimensions: " + Shape(old_dims).to_string() +
                     " is not a run of consecutive dimensions of " + shape.to_string());
  }
  std::vector<Dimension> dims(shape.dims().begin(), shape.dims().begin() + first);
  dims.insert(dims.end(), new_dims.begin(), new_dims.end());
  dims.insert(dims.end(), shape.dims().begin() + first + old_dims.size(), shape.dims().end());
  return Shape(dims);
}

Tensor replace_dimensions(const Tensor& x, const std::vector<Dimension>& old_dims,
                          const std::vector<Dimension>& new_dims) {
  return reshape(x, replace_dimensions(x.shape(), old_dims, new_dims));
}

Tensor rename_dimension(const Tensor& x, const DimRef& old_dim, const std::string& new_name) {
  const std::string old_name = ops::dim_of("rename_dimension", x, old_dim).name;
  return reshape(x, x.shape().rename(old_name, new_name));
}

Tensor slice(const Tensor& x, int64_t begin, int64_t size, const DimRef& dim) {
  const std::string dim_name = ops::dim_of("slice", x, dim).name;
  return x.graph().add<AxisOp>(AxisOp::Kind::kSlice, x, dim_name, begin, size, false)->output(0);
}

Tensor pad(const Tensor& x, int64_t before, int64_t after, const DimRef& dim) {
  const std::string dim_name = ops::dim_of("pad", x, dim).name;
  return x.graph().add<AxisOp>(AxisOp::Kind::kPad, x, dim_name, before, after, false)->output(0);
}

Tensor dynamic_shift(const Tensor& x, const Tensor& offset, const DimRef& ref, bool wrap) {
  const OriginScope origin = ops::made_by("dynamic_shift", x);
  const Dimension dim = ops::dim_of("dynamic_shift", x, ref);
  if (!offset.valid() || offset.dtype() != int32) {
    throw DTypeError("dynamic_shift: offset must be an int32 tensor" +
                     (offset.valid() ? ", not " + offset.describe() : std::string()));
  }
  if (offset.shape().contains(dim.name) || !offset.shape().is_subset_of(x.shape())) {
    throw ShapeError("dynamic_shift: offset " + offset.describe() + " must have dimensions of x " +
                     x.describe() + " other than " + dim.to_string());
  }
  const Dimension from{dim.name + "_dynamic_shift_from", dim.size};
  const Tensor x_from = rename_dimension(x, dim.name, from.name);
  Tensor target = range(x.mesh(), from, int32) + offset;
  if (wrap) target = mod(target, constant(x.mesh(), static_cast<float>(dim.size), Shape(), int32));
  // perm[from, dim] = 1 where from + offset lands on dim.
  const Tensor perm = cast(equal(range(x.mesh(), dim, int32), target), x.dtype());
  return einsum({x_from, perm}, x.shape());
}

Tensor shift(const Tensor& x, int64_t offset, const DimRef& dim, bool wrap) {
  const std::string name = ops::dim_of("shift", x, dim).name;
  return x.graph().add<AxisOp>(AxisOp::Kind::kShift, x, name, offset, 0, wrap)->output(0);
}

Tensor concat(const std::vector<Tensor>& xs, const DimRef& dim) {
  if (xs.empty()) throw ValueError("concat: no tensors to concatenate");
  const OriginScope origin = ops::made_by("concat", xs.at(0));
  const std::string& dim_name = dim.name();
  ops::check_same_dtype("concat", xs);
  const Tensor& first = xs[0];
  ops::axis_of("concat", first, dim_name);
  const Shape rest = first.shape().minus(Shape({first.shape().get(dim_name)}));
  int64_t total = 0;
  std::vector<Tensor> arranged;
  for (const Tensor& x : xs) {
    const int64_t n = x.shape()[ops::axis_of("concat", x, dim_name)].size;
    const Shape xr = x.shape().minus(Shape({x.shape().get(dim_name)}));
    if (!xr.same_dims_as(rest)) {
      throw ShapeError(detail::str_cat("concat along \"", dim_name, "\": input ", x.describe(),
                                       " differs from ", first.describe(),
                                       " in dimensions other than \"", dim_name, "\""));
    }
    // Inputs with the same dimensions in another order are transposed.
    arranged.push_back(transpose(x, first.shape().resize(dim_name, n)));
    total += n;
  }
  return first.graph()
      .add<ConcatOp>(arranged, dim_name, first.shape().resize(dim_name, total))
      ->output(0);
}

std::vector<Tensor> split(const Tensor& x, const DimRef& split_ref,
                          const std::vector<int64_t>& sizes) {
  const OriginScope origin = ops::made_by("split", x);
  const Dimension split_dim = ops::dim_of("split", x, split_ref);
  const int64_t n = split_dim.size;
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sum != n) {
    throw ValueError(detail::str_cat("split: sizes sum to ", sum, " but dimension \"",
                                     split_dim.name, "\" of ", x.describe(), " has size ", n));
  }
  std::vector<Tensor> r;
  int64_t at = 0;
  for (int64_t s : sizes) {
    r.push_back(slice(x, at, s, split_dim.name));
    at += s;
  }
  return r;
}

std::vector<Tensor> split(const Tensor& x, const DimRef& split_ref, int num_splits) {
  const Dimension split_dim = ops::dim_of("split", x, split_ref);
  const int64_t n = split_dim.size;
  if (num_splits <= 0 || n % num_splits != 0) {
    throw ValueError(detail::str_cat("split: ", num_splits, " pieces do not divide dimension \"",
                                     split_dim.name, "\" of size ", n, " of ", x.describe()));
  }
  return split(x, split_dim, std::vector<int64_t>(num_splits, n / num_splits));
}

Tensor stack(const std::vector<Tensor>& xs, const std::string& dim_name, int axis) {
  if (xs.empty()) throw ValueError("stack: no tensors to stack");
  const OriginScope origin = ops::made_by("stack", xs.at(0));
  ops::check_same_dtype("stack", xs);
  const Shape& s = xs[0].shape();
  if (axis < 0 || axis > s.ndims()) {
    throw ValueError(detail::str_cat("stack: axis ", axis, " is outside [0, ", s.ndims(), "] for ",
                                     xs[0].describe()));
  }
  if (s.contains(dim_name)) {
    throw ShapeError(detail::str_cat("stack: new dimension \"", dim_name, "\" already exists in ",
                                     xs[0].describe()));
  }
  std::vector<Dimension> dims = s.dims();
  dims.insert(dims.begin() + axis, Dimension{dim_name, static_cast<int64_t>(xs.size())});
  std::vector<Tensor> arranged;
  for (const Tensor& x : xs) {
    if (!x.shape().same_dims_as(s)) {
      throw ShapeError(detail::str_cat("stack: input ", x.describe(), " differs in shape from ",
                                       xs[0].describe()));
    }
    arranged.push_back(transpose(x, s));
  }
  return xs[0].graph().add<StackOp>(arranged, Shape(dims), axis)->output(0);
}

std::vector<Tensor> unstack(const Tensor& x, const DimRef& dim) {
  const int axis = x.shape().index_of(ops::dim_of("unstack", x, dim).name);
  return x.graph().add<UnstackOp>(x, axis)->outputs();
}

}  // namespace mtf
