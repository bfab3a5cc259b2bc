// mtf/dtype.h — element types: float32, int32, bfloat16 (a storage type:
// ops compute on it in float32 and round their results to it) and bool (one
// byte an element, 0 or 1: what comparisons return and logical ops, where
// and masks take; ops without a bool kernel compute on it as int32 0/1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mtf {

enum class DType : uint8_t { kFloat32, kInt32, kBFloat16, kBool };

constexpr DType float32 = DType::kFloat32;
constexpr DType int32 = DType::kInt32;
constexpr DType bfloat16 = DType::kBFloat16;
constexpr DType bool_ = DType::kBool;  // NumPy's spelling: `bool` is a keyword

// float32 or bfloat16: the dtypes that carry gradients.
constexpr bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16;
}

// Bytes per element.
size_t dtype_size(DType dtype);
// "float32", "int32", "bfloat16", "bool".
std::string dtype_name(DType dtype);
// The dtype of that name; false when there is none (callers say what the
// name was for).
bool dtype_from_name(const std::string& name, DType* dtype);

}  // namespace mtf
