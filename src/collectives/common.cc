// common.cc — the helpers every collective algorithm shares (common.h).
#include "collectives/common.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::collectives {

int segment_count(const Transport& t, int64_t elems, size_t elem_size) {
  const size_t seg = t.ring_segment_bytes();
  if (seg == 0) return 1;
  const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(seg / elem_size));
  return static_cast<int>(std::max<int64_t>(1, (elems + per - 1) / per));
}

size_t element_size(DType dtype) { return dtype_size(dtype); }

namespace {
template <typename T>
void reduce_typed(T* d, const T* s, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      for (int64_t i = 0; i < n; ++i) d[i] += s[i];
      return;
    // NaN wins max and min (NumPy's maximum and minimum), on every rank alike.
    case ReduceOp::kMax:
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] > d[i] || s[i] != s[i] ? s[i] : d[i];
      return;
    case ReduceOp::kMin:
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] < d[i] || s[i] != s[i] ? s[i] : d[i];
      return;
  }
}
// bfloat16: each element's two values summed (or compared) in float32 and
// the result rounded once, a block at a time.
void reduce_bfloat16(uint16_t* d, const uint16_t* s, int64_t n, ReduceOp op) {
  constexpr int64_t kBlock = 1024;
  float a[kBlock], b[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    bfloat16_to_floats(d + i, a, m);
    bfloat16_to_floats(s + i, b, m);
    reduce_typed(a, b, m, op);
    floats_to_bfloat16(a, d + i, m);
  }
}
}  // namespace

void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  if (dtype == bfloat16) {
    reduce_bfloat16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, op);
  } else if (dtype == float32) {
    reduce_typed(static_cast<float*>(dst), static_cast<const float*>(src), count, op);
  } else {
    reduce_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, op);
  }
}

void check_group(const Transport& t, const Group& g, const char* what) {
  if (g.size() < 1 || g.index < 0 || g.index >= g.size()) {
    throw ValueError(
        detail::str_cat(what, ": group position ", g.index, " is outside a group of ", g.size()));
  }
  if (g.ranks[g.index] != t.rank()) {
    throw ValueError(detail::str_cat(what, ": the group puts rank ", g.ranks[g.index],
                                     " at position ", g.index, " but the caller is rank ",
                                     t.rank()));
  }
  // Small groups (every call of a small-message collective checks its
  // group) compare pairs instead of allocating a table of the job's ranks.
  const size_t n = g.ranks.size();
  const bool small = n <= 32;
  std::vector<bool> seen(small ? 0 : static_cast<size_t>(t.size()), false);
  for (size_t i = 0; i < n; ++i) {
    const int r = g.ranks[i];
    bool bad = r < 0 || r >= t.size();
    if (!bad && !small) {
      bad = seen[r];
      seen[r] = true;
    }
    for (size_t j = 0; j < i && small && !bad; ++j) bad = g.ranks[j] == r;
    if (bad) {
      throw ValueError(detail::str_cat(what, ": group rank ", r,
                                       " is repeated or outside the job of ", t.size(), " ranks"));
    }
  }
}

}  // namespace mtf::collectives
