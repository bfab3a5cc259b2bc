// Ops on indices: one_hot, range, gather.
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

void require_int_indices(const char* op, const Tensor& indices) {
  if (indices.dtype() != int32) {
    throw DTypeError(detail::str_cat(op, ": indices ", indices.describe(), " must be int32, not ",
                                     dtype_name(indices.dtype()), " (cast them)"));
  }
}

class OneHotOp : public Operation {
 public:
  OneHotOp(const Tensor& indices, const Dimension& dim, float on, float off, DType dtype)
      : Operation(indices.mesh(), "one_hot", {indices}, ""), on_(on), off_(off) {
    require_int_indices("one_hot", indices);
    if (indices.shape().contains(dim.name)) {
      throw ShapeError(detail::str_cat("one_hot: output dimension \"", dim.name,
                                       "\" already exists in indices ", indices.describe()));
    }
    std::vector<Dimension> dims = indices.shape().dims();
    dims.push_back(dim);
    add_output(Shape(dims), dtype);
  }
  void compute(KernelContext& ctx) const override {
    const auto& off = ctx.output_slice_offset(0);
    kernels::one_hot(ctx.input(0), off.back(), on_, off_, ctx.allocate_output(0));
  }
  bool differentiable() const override { return false; }

 private:
  float on_, off_;
};

class RangeOp : public Operation {
 public:
  RangeOp(const Mesh& mesh, const Dimension& dim, DType dtype) : Operation(mesh, "range", {}, "") {
    add_output(Shape({dim}), dtype);
  }
  void compute(KernelContext& ctx) const override {
    kernels::range(ctx.output_slice_offset(0)[0], ctx.allocate_output(0));
  }
  bool differentiable() const override { return false; }
};

class GatherOp : public Operation {
 public:
  GatherOp(const Tensor& weights, const Tensor& indices, const Dimension& dim)
      : Operation(weights.mesh(), "gather", {weights, indices}, ""),
        axis_(ops::axis_of("gather", weights, dim.name)) {
    require_int_indices("gather", indices);
    if (indices.shape().contains(dim.name)) {
      throw ShapeError(detail::str_cat(
          "gather: indices ", indices.describe(), " have the gathered dimension \"", dim.name,
          "\" of weights ", weights.describe(), "; rename the indices' dimension"));
    }
    // Dimensions the indices share with the weights are batch dimensions:
    // each index picks from its own part of the weights, as in Mesh
    // TensorFlow (w[b, v], idx[b] -> out[b]).
    std::vector<Dimension> dims = indices.shape().dims();
    for (const Dimension& d : weights.shape()) {
      if (d.name == dim.name) continue;
      const int i = indices.shape().index_of(d.name);
      if (i < 0) {
        dims.push_back(d);
      } else if (indices.shape()[i].size != d.size) {
        throw ShapeError(detail::str_cat("gather: indices ", indices.describe(), " and weights ",
                                         weights.describe(), " disagree on the size of \"", d.name,
                                         "\""));
      }
    }
    add_output(Shape(dims), weights.dtype());
  }
  void compute(KernelContext& ctx) const override {
    // Split along dim, each processor gathers the rows its slice holds (zeros
    // for the others) and the lowering sums the slices' results.
    kernels::gather(ctx.input(0), axis_, ctx.input(1), ctx.input_slice_offset(0)[axis_],
                    ctx.allocate_output(0));
  }
  bool differentiable() const override { return is_floating(inputs()[0].dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& w = inputs()[0];
    return {
        einsum({one_hot(inputs()[1], w.shape()[axis_], 1.0f, 0.0f, g[0].dtype()), g[0]}, w.shape()),
        Tensor()};
  }
  double flops() const override { return 0; }
  std::vector<std::string> reduced_dims() const override {
    return {inputs()[0].shape()[axis_].name};
  }

 private:
  int axis_;
};

}  // namespace

Tensor one_hot(const Tensor& indices, const Dimension& output_dim, float on_value, float off_value,
               DType dtype) {
  return indices.graph().add<OneHotOp>(indices, output_dim, on_value, off_value, dtype)->output(0);
}

Tensor range(const Mesh& mesh, const Dimension& dim, DType dtype) {
  return mesh.graph().add<RangeOp>(mesh, dim, dtype)->output(0);
}

Tensor gather(const Tensor& weights, const Tensor& indices, const DimRef& dim) {
  return weights.graph()
      .add<GatherOp>(weights, indices, ops::dim_of("gather", weights, dim))
      ->output(0);
}

Tensor gather(const Tensor& weights, const Tensor& indices, const DimRef& dim,
              const Shape& output_shape) {
  const Tensor out = gather(weights, indices, dim);
  if (!out.shape().same_dims_as(output_shape)) {
    throw ShapeError("gather: output_shape " + output_shape.to_string() +
                     " must hold exactly the result's dimensions " + out.shape().to_string());
  }
  return out.shape() == output_shape ? out : transpose(out, output_shape);
}

}  // namespace mtf
