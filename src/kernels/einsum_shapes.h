// einsum_shapes.h — how einsum's kernels see named dimensions inside a
// tensor's row-major storage: sizes of name groups, strides by name, a
// group folded into one strided axis, and loop plans over named axes.
// Internal to src/kernels.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/strided_loop.h"
#include "mtf/shape.h"

namespace mtf::kernels {

using Names = std::vector<std::string>;

// The number of elements of the dimensions `names` of `s`.
inline int64_t product(const Shape& s, const Names& names) {
  int64_t p = 1;
  for (const auto& n : names) p *= s.get(n).size;
  return p;
}

// Row-major strides of s, by dimension name.
inline int64_t stride_of(const Shape& s, const std::string& name) {
  int64_t st = 1;
  for (int i = s.ndims() - 1; i >= 0; --i) {
    if (s[i].name == name) return st;
    st *= s[i].size;
  }
  MTF_CHECK(false);
  return 0;
}

// A loop plan over the named axes for three operands; an operand lacking an
// axis steps 0 along it. Sizes come from `sized`, which has every axis.
inline StridedPlan<3> plan3(const Names& axes, const Shape& sized, const Shape& s0, const Shape& s1,
                            const Shape& s2) {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, 3> strides;
  const Shape* shapes[3] = {&s0, &s1, &s2};
  for (const auto& n : axes) {
    sizes.push_back(sized.get(n).size);
    for (int k = 0; k < 3; ++k)
      strides[k].push_back(shapes[k]->contains(n) ? stride_of(*shapes[k], n) : 0);
  }
  return make_plan<3>(sizes, strides);
}

// The stride of `group` folded into one axis of `s`, or -1 when it does not
// fold (its dimensions of size > 1 must lie in `s` in this order, each outer
// one stepping over exactly the inner one). 0 when the group is empty or all
// of size 1 (any stride will do).
inline int64_t folded_stride(const Shape& s, const Names& group) {
  int64_t inner_stride = 0, inner_size = 0, last_pos = -1;
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    const Dimension& d = s.get(*it);
    if (d.size == 1) continue;
    const int64_t pos = s.index_of(*it), st = stride_of(s, *it);
    if (last_pos >= 0 && (pos >= last_pos || st != inner_stride * inner_size)) return -1;
    if (last_pos < 0) {
      inner_stride = st;
      inner_size = d.size;
    } else {
      inner_size *= d.size;
    }
    last_pos = pos;
  }
  return inner_stride;
}

}  // namespace mtf::kernels
