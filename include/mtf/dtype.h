// mtf/dtype.h — element types. float32 and int32 run on the CPU kernels;
// bfloat16 is named so graphs and cost models can use it, and CPU kernels
// reject it with a DTypeError until they support it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mtf {

enum class DType : uint8_t { kFloat32, kInt32, kBFloat16 };

constexpr DType float32 = DType::kFloat32;
constexpr DType int32 = DType::kInt32;
constexpr DType bfloat16 = DType::kBFloat16;

// Bytes per element.
size_t dtype_size(DType dtype);
// "float32", "int32", "bfloat16".
std::string dtype_name(DType dtype);

}  // namespace mtf
