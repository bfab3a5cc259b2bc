#include "mtf/dtype.h"

namespace mtf {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kBFloat16:
      return 2;
    case DType::kBool:
      return 1;
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
    case DType::kBool:
      return "bool";
  }
  return "unknown";
}

bool dtype_from_name(const std::string& name, DType* dtype) {
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kBFloat16, DType::kBool}) {
    if (name == dtype_name(d)) {
      *dtype = d;
      return true;
    }
  }
  return false;
}

}  // namespace mtf
