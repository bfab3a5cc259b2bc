// Running sums and products along a named dimension (Mesh TensorFlow's
// cumsum; cumprod as TensorFlow has it), with their gradients. The scanned
// dimension is unsplittable: a split one is gathered first, so every layout
// gives the one-processor result.
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

using kernels::ScanFn;

class ScanOp : public Operation {
 public:
  ScanOp(ScanFn fn, const Tensor& x, const std::string& dim, bool exclusive, bool reverse)
      : Operation(x.mesh(), fn == ScanFn::kSum ? "cumsum" : "cumprod", {x}, ""),
        fn_(fn),
        exclusive_(exclusive),
        reverse_(reverse) {
    axis_ = ops::axis_of(type(), x, dim);
    if (x.dtype() != float32 && x.dtype() != int32) {
      throw DTypeError(detail::str_cat(type(), ": ", x.describe(), " must be float32 or int32"));
    }
    add_output(x.shape(), x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    kernels::scan(fn_, ctx.input(0), axis_, exclusive_, reverse_, ctx.allocate_output(0));
  }
  bool differentiable() const override { return is_floating(output(0).dtype()); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override;
  double flops() const override { return static_cast<double>(output(0).shape().num_elements()); }
  std::vector<std::string> unsplittable_dims() const override {
    return {inputs()[0].shape()[axis_].name};
  }
  int axis() const { return axis_; }

 private:
  ScanFn fn_;
  int axis_ = 0;
  bool exclusive_, reverse_;
};

// dL/dx of cumprod for output gradient g (kernels::cumprod_grad).
class CumprodGradOp : public Operation {
 public:
  CumprodGradOp(const Tensor& x, const Tensor& g, int axis, bool exclusive, bool reverse)
      : Operation(x.mesh(), "cumprod_grad", {x, g}, ""),
        axis_(axis),
        exclusive_(exclusive),
        reverse_(reverse) {
    add_output(x.shape(), float32);
  }
  void compute(KernelContext& ctx) const override {
    const HostTensor& x = ctx.input(0);
    // g may hold its dimensions in another order: bring it to x's.
    HostTensor g = ctx.input(1);
    if (g.shape() != x.shape()) {
      HostTensor arranged(x.shape(), float32);
      kernels::broadcast_copy(g, arranged);
      g = arranged;
    }
    kernels::cumprod_grad(x, g, axis_, exclusive_, reverse_, ctx.allocate_output(0));
  }
  bool differentiable() const override { return false; }
  double flops() const override {
    return 3.0 * static_cast<double>(output(0).shape().num_elements());
  }
  std::vector<std::string> unsplittable_dims() const override {
    return {inputs()[0].shape()[axis_].name};
  }

 private:
  int axis_;
  bool exclusive_, reverse_;
};

std::vector<Tensor> ScanOp::gradient(const std::vector<Tensor>& g) const {
  const Tensor& x = inputs()[0];
  const std::string& dim = x.shape()[axis_].name;
  if (fn_ == ScanFn::kSum) return {cumsum(g[0], dim, exclusive_, !reverse_)};
  return {x.graph().add<CumprodGradOp>(x, g[0], axis_, exclusive_, reverse_)->output(0)};
}

Tensor scan_op(ScanFn fn, const Tensor& x, const std::string& dim, bool exclusive, bool reverse) {
  if (!x.valid())
    throw ValueError(std::string(fn == ScanFn::kSum ? "cumsum" : "cumprod") +
                     ": x is an invalid mtf::Tensor");
  return x.graph().add<ScanOp>(fn, x, dim, exclusive, reverse)->output(0);
}

}  // namespace

Tensor cumsum(const Tensor& x, const DimRef& dim, bool exclusive, bool reverse) {
  return scan_op(ScanFn::kSum, x, ops::dim_of("cumsum", x, dim).name, exclusive, reverse);
}
Tensor cumprod(const Tensor& x, const DimRef& dim, bool exclusive, bool reverse) {
  return scan_op(ScanFn::kProd, x, ops::dim_of("cumprod", x, dim).name, exclusive, reverse);
}

}  // namespace mtf
