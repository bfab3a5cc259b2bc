// Kernels that move blocks along one axis: slice, pad, concat, shift.
// Each views a tensor as [outer, axis, inner] and copies contiguous
// `inner`-sized runs.
#include <cstring>

#include "core/check.h"
#include "kernels/kernels.h"

namespace mtf::kernels {
namespace {

struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisView view(const Shape& s, int axis) {
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

// Copies `count` positions of src's axis starting at src_begin into dst's
// axis starting at dst_begin.
void copy_along(const HostTensor& src, int64_t src_begin, HostTensor& dst, int64_t dst_begin,
                int64_t count, int axis) {
  if (count <= 0) return;
  const AxisView s = view(src.shape(), axis), d = view(dst.shape(), axis);
  MTF_CHECK(s.outer == d.outer && s.inner == d.inner);
  const size_t es = dtype_size(src.dtype());
  const char* ps = static_cast<const char*>(src.raw_data());
  char* pd = static_cast<char*>(dst.raw_data());
  const size_t run = count * s.inner * es;
  for (int64_t o = 0; o < s.outer; ++o) {
    std::memcpy(pd + ((o * d.len + dst_begin) * d.inner) * es,
                ps + ((o * s.len + src_begin) * s.inner) * es, run);
  }
}

void zero(HostTensor& t) {
  if (t.num_bytes()) std::memset(t.raw_data(), 0, t.num_bytes());
}

}  // namespace

void slice(const HostTensor& x, int axis, int64_t begin, HostTensor& out) {
  copy_along(x, begin, out, 0, out.shape()[axis].size, axis);
}

void pad(const HostTensor& x, int axis, int64_t before, HostTensor& out) {
  zero(out);
  copy_along(x, 0, out, before, x.shape()[axis].size, axis);
}

void concat(const std::vector<const HostTensor*>& xs, int axis, HostTensor& out) {
  int64_t at = 0;
  for (const HostTensor* x : xs) {
    copy_along(*x, 0, out, at, x->shape()[axis].size, axis);
    at += x->shape()[axis].size;
  }
  MTF_CHECK(at == out.shape()[axis].size);
}

void shift(const HostTensor& x, int axis, int64_t offset, bool wrap, HostTensor& out) {
  const int64_t n = x.shape()[axis].size;
  if (n == 0) return;
  if (wrap) {
    const int64_t s = ((offset % n) + n) % n;
    // out[(i + s) % n] = x[i]
    copy_along(x, 0, out, s, n - s, axis);
    copy_along(x, n - s, out, 0, s, axis);
    return;
  }
  zero(out);
  if (offset >= n || -offset >= n) return;
  if (offset >= 0) {
    copy_along(x, 0, out, offset, n - offset, axis);
  } else {
    copy_along(x, -offset, out, 0, n + offset, axis);
  }
}

}  // namespace mtf::kernels
