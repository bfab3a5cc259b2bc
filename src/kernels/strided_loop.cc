#include "kernels/strided_loop.h"

namespace mtf::kernels {

std::vector<int64_t> strides_along(const std::vector<std::string>& axes,
                                   const std::vector<std::string>& operand_names,
                                   const std::vector<int64_t>& operand_strides) {
  std::vector<int64_t> s(axes.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t j = 0; j < operand_names.size(); ++j)
      if (operand_names[j] == axes[i]) s[i] = operand_strides[j];
  return s;
}

}  // namespace mtf::kernels
