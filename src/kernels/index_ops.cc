// Kernels on indices: one_hot, range, gather, top_k.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/check.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"

namespace mtf::kernels {

void one_hot(const HostTensor& indices, int64_t offset, float on, float off, HostTensor& out) {
  require_supported(indices, true, "one_hot");
  if (indices.dtype() != int32) throw DTypeError("one_hot: indices must be int32");
  const int64_t depth = out.shape()[out.shape().ndims() - 1].size;
  const int64_t n = indices.num_elements();
  const int32_t* idx = indices.data<int32_t>();
  auto run = [&](auto* po, auto onv, auto offv) {
    for (int64_t i = 0; i < n; ++i) {
      auto* row = po + i * depth;
      for (int64_t j = 0; j < depth; ++j) row[j] = offv;
      const int64_t p = static_cast<int64_t>(idx[i]) - offset;
      if (p >= 0 && p < depth) row[p] = onv;
    }
  };
  if (out.dtype() == float32) {
    run(out.data<float>(), on, off);
  } else {
    run(out.data<int32_t>(), static_cast<int32_t>(on), static_cast<int32_t>(off));
  }
}

void range(int64_t start, HostTensor& out) {
  const int64_t n = out.num_elements();
  if (out.dtype() == float32) {
    float* p = out.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(start + i);
  } else {
    int32_t* p = out.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(start + i);
  }
}

void gather(const HostTensor& weights, int axis, const HostTensor& indices, int64_t index_offset,
            HostTensor& out) {
  if (indices.dtype() != int32) throw DTypeError("gather: indices must be int32");
  require_supported(weights, true, "gather");
  const Shape& ws = weights.shape();
  const Shape& is = indices.shape();
  const std::vector<int64_t> wstrides = ws.strides();
  // Per index element: the offset in weights of the dimensions it shares
  // with them (a batched gather), by name.
  const std::vector<int64_t> shared_strides = strides_along(is.names(), ws.names(), wstrides);
  // The rest of out (after the indices' dimensions): weights' other
  // dimensions, in weights' order, as (size, weights stride); the last one
  // is copied as a run when its stride is 1.
  std::vector<int64_t> rest_sizes, rest_strides;
  for (int d = 0; d < ws.ndims(); ++d) {
    if (d == axis || is.contains(ws[d].name)) continue;
    rest_sizes.push_back(ws[d].size);
    rest_strides.push_back(wstrides[d]);
  }
  const int64_t run = rest_sizes.empty() || rest_strides.back() != 1 ? 1 : rest_sizes.back();
  if (run > 1) {
    rest_sizes.pop_back();
    rest_strides.pop_back();
  }
  std::vector<int64_t> rest_offsets{0};  // offsets of each run, in out's order
  for (size_t d = 0; d < rest_sizes.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t base : rest_offsets)
      for (int64_t j = 0; j < rest_sizes[d]; ++j) next.push_back(base + j * rest_strides[d]);
    rest_offsets = std::move(next);
  }
  const int64_t len = ws[axis].size, axis_stride = wstrides[axis];
  const size_t es = dtype_size(weights.dtype());
  const int32_t* idx = indices.data<int32_t>();
  const char* pw = static_cast<const char*>(weights.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  const int64_t per_index = static_cast<int64_t>(rest_offsets.size()) * run;
  MTF_CHECK(out.num_elements() == indices.num_elements() * per_index);
  // Walk the indices in row-major order, tracking the shared offset.
  std::vector<int64_t> coord(is.ndims(), 0);
  int64_t shared = 0;
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    const int64_t k = idx[i] - index_offset;
    char* dst = po + i * per_index * static_cast<int64_t>(es);
    if (k < 0 || k >= len) {
      std::memset(dst, 0, static_cast<size_t>(per_index) * es);
    } else {
      const int64_t base = shared + k * axis_stride;
      for (size_t r = 0; r < rest_offsets.size(); ++r)
        std::memcpy(dst + r * run * es, pw + (base + rest_offsets[r]) * es, run * es);
    }
    for (int d = is.ndims() - 1; d >= 0; --d) {
      shared += shared_strides[d];
      if (++coord[d] < is[d].size) break;
      shared -= shared_strides[d] * is[d].size;
      coord[d] = 0;
    }
  }
}

void top_k(const HostTensor& x, int axis, HostTensor& values, HostTensor& indices) {
  require_supported(x, true, "top_k");
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i].size;
  for (int i = axis + 1; i < s.ndims(); ++i) inner *= s[i].size;
  const int64_t len = s[axis].size;
  const int64_t k = values.shape()[axis].size;
  MTF_CHECK(k <= len);
  std::vector<int32_t> order(len);
  auto run = [&](const auto* px, auto* pv) {
    int32_t* pi = indices.data<int32_t>();
    std::vector<std::remove_const_t<std::remove_pointer_t<decltype(px)>>> row(len);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        for (int64_t j = 0; j < len; ++j) row[j] = px[(o * len + j) * inner + in];
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
          return row[a] > row[b] || (row[a] == row[b] && a < b);
        });
        for (int64_t j = 0; j < k; ++j) {
          pv[(o * k + j) * inner + in] = row[order[j]];
          pi[(o * k + j) * inner + in] = order[j];
        }
      }
    }
  };
  if (x.dtype() == float32) {
    run(x.data<float>(), values.data<float>());
  } else {
    run(x.data<int32_t>(), values.data<int32_t>());
  }
}

}  // namespace mtf::kernels
