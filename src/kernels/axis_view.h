// axis_view.h — a tensor seen as [outer, len, inner] around one axis: the
// shape every kernel along one axis (slice, pad, shift, scans) walks. Internal.
#pragma once

#include <cstdint>

#include "mtf/shape.h"

namespace mtf::kernels {

struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

inline AxisView view_around(const Shape& s, int axis) {
  AxisView v;
  for (int i = 0; i < s.ndims(); ++i) {
    if (i < axis)
      v.outer *= s[i].size;
    else if (i == axis)
      v.len = s[i].size;
    else
      v.inner *= s[i].size;
  }
  return v;
}

}  // namespace mtf::kernels
