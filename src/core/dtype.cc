#include "mtf/dtype.h"

namespace mtf {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kBFloat16:
      return 2;
  }
  return 4;
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt32:
      return "int32";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

}  // namespace mtf
