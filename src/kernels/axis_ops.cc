// Kernels that move blocks along one axis: slice, pad, concat, shift.
// Each views a tensor as [outer, axis, inner] and copies contiguous
// `inner`-sized runs.
#include <cstring>

#include "core/check.h"
#include "kernels/axis_view.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"

namespace mtf::kernels {
namespace {

// Copies `count` positions of src's axis starting at src_begin into dst's
// axis starting at dst_begin.
void copy_along(const HostTensor& src, int64_t src_begin, HostTensor& dst, int64_t dst_begin,
                int64_t count, int axis) {
  if (count <= 0) return;
  const AxisView s = view_around(src.shape(), axis), d = view_around(dst.shape(), axis);
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

namespace {

// Copies between `full` and a block of it at `begin`, row by row.
void copy_block(const HostTensor& full, const std::vector<int64_t>& begin, const Shape& shape,
                char* block, bool to_block, char* full_data) {
  const size_t es = dtype_size(full.dtype());
  const auto fs = full.shape().strides();
  int64_t base = 0;
  for (size_t i = 0; i < begin.size(); ++i) base += begin[i] * fs[i];
  auto plan = make_plan<2>(shape.sizes(), {fs, shape.strides()});
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    char* f = full_data + (base + off[0]) * es;
    char* b = block + off[1] * es;
    if (s[0] == 1 && s[1] == 1) {
      if (to_block)
        std::memcpy(b, f, n * es);
      else
        std::memcpy(f, b, n * es);
    } else {
      for (int64_t k = 0; k < n; ++k) {
        if (to_block)
          std::memcpy(b + k * s[1] * es, f + k * s[0] * es, es);
        else
          std::memcpy(f + k * s[0] * es, b + k * s[1] * es, es);
      }
    }
  });
}

}  // namespace

HostTensor block_of(const HostTensor& full, const std::vector<int64_t>& begin, const Shape& shape) {
  if (shape == full.shape()) return full;
  MTF_CHECK(static_cast<int>(begin.size()) == shape.ndims());
  HostTensor out(shape, full.dtype());
  copy_block(full, begin, shape, static_cast<char*>(out.raw_data()), true,
             const_cast<char*>(static_cast<const char*>(full.raw_data())));
  return out;
}

void insert_block(HostTensor& full, const std::vector<int64_t>& begin, const HostTensor& block) {
  MTF_CHECK(block.dtype() == full.dtype());
  copy_block(full, begin, block.shape(),
             const_cast<char*>(static_cast<const char*>(block.raw_data())), false,
             static_cast<char*>(full.raw_data()));
}

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
