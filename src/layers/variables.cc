// Variables of layers: created by name, reused when a layer is called again
// with the same name, and their default initializer (include/mtf/layers.h).
#include <algorithm>
#include <cmath>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor get_or_create_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                              Initializer initializer, const VariableDType& dtype, bool trainable) {
  if (Operation* op = mesh.graph().find_operation(name)) {
    const Tensor existing = op->output(0);
    if (!is_variable(existing)) {
      throw ValueError(detail::str_cat("layers: \"", name,
                                       "\" names an op that is not a variable; give the layer "
                                       "another name"));
    }
    if (existing.shape() != shape || existing.dtype() != dtype.slice) {
      throw ShapeError(detail::str_cat("layers: variable \"", name, "\" exists as ",
                                       existing.describe(), " but the layer asks for ",
                                       shape.to_string(), " ", dtype_name(dtype.slice),
                                       "; a reused layer name must keep its shape and dtype"));
    }
    return existing.dtype() == dtype.activation ? existing : cast(existing, dtype.activation);
  }
  return get_variable(mesh, name, shape, initializer, dtype, trainable);
}

Tensor get_or_create_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                              Initializer initializer, DType dtype, bool trainable) {
  return get_or_create_variable(mesh, name, shape, initializer, VariableDType::of(dtype),
                                trainable);
}

VariableDType variable_dtype_for(const Tensor& x) {
  const DType activation = x.dtype() == bfloat16 ? bfloat16 : float32;
  return VariableDType(float32, x.graph().layer_slice_dtype(), activation);
}

Initializer variance_scaling(const std::vector<Dimension>& reduced, float scale) {
  double fan_in = 1;
  for (const Dimension& d : reduced) fan_in *= static_cast<double>(d.size);
  return Initializer::normal(0.0f, static_cast<float>(std::sqrt(scale / std::max(1.0, fan_in))));
}

}  // namespace mtf::layers
