// Creation ops: constant (fill), import of host data, placeholders fed per run.
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

class ConstantOp : public Operation {
 public:
  ConstantOp(const Mesh& mesh, float value, const Shape& shape, DType dtype,
             const std::string& name)
      : Operation(mesh, "constant", {}, name), value_(value) {
    add_output(shape, dtype);
  }
  void compute(KernelContext& ctx) const override { kernels::fill(ctx.allocate_output(0), value_); }
  double flops() const override { return 0; }

 private:
  float value_;
};

class ImportOp : public Operation {
 public:
  ImportOp(const Mesh& mesh, const HostTensor& value, const std::string& name)
      : Operation(mesh, "import", {}, name), value_(value.clone()) {
    add_output(value.shape(), value.dtype());
  }
  void compute(KernelContext& ctx) const override {
    ctx.set_output(
        0, kernels::block_of(value_, ctx.output_slice_offset(0), ctx.output_slice_shape(0)));
  }
  double flops() const override { return 0; }

 private:
  HostTensor value_;
};

class PlaceholderOp : public Operation {
 public:
  PlaceholderOp(const Mesh& mesh, const Shape& shape, DType dtype, const std::string& name)
      : Operation(mesh, "placeholder", {}, name) {
    add_output(shape, dtype);
  }
  void compute(KernelContext& ctx) const override {
    // The fed block may start anywhere (a sharded feed): read this slice
    // relative to it.
    const FedValue& fed = ctx.state().feeds->at(output(0).id());
    std::vector<int64_t> at = ctx.output_slice_offset(0);
    for (size_t a = 0; a < at.size(); ++a) at[a] -= fed.begin[a];
    ctx.set_output(0, kernels::block_of(fed.value, at, ctx.output_slice_shape(0)));
  }
  double flops() const override { return 0; }
};

}  // namespace

Tensor constant(const Mesh& mesh, float value, const Shape& shape, DType dtype,
                const std::string& name) {
  return mesh.graph().add<ConstantOp>(mesh, value, shape, dtype, name)->output(0);
}

Tensor zeros(const Mesh& mesh, const Shape& shape, DType dtype) {
  return constant(mesh, 0.0f, shape, dtype, "zeros");
}

Tensor ones(const Mesh& mesh, const Shape& shape, DType dtype) {
  return constant(mesh, 1.0f, shape, dtype, "ones");
}

Tensor import_host(const Mesh& mesh, const HostTensor& value, const std::string& name) {
  if (!value.valid()) throw ValueError("import_host: the HostTensor to import is empty");
  return mesh.graph().add<ImportOp>(mesh, value, name)->output(0);
}

Tensor placeholder(const Mesh& mesh, const Shape& shape, DType dtype, const std::string& name) {
  return mesh.graph().add<PlaceholderOp>(mesh, shape, dtype, name)->output(0);
}

}  // namespace mtf
