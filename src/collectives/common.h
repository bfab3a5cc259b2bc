// common.h — what every collective algorithm shares: element sizes,
// elementwise reduction of buffers, sub-tags of a collective's messages,
// group checks, and how a buffer region splits into chunks and segments.
// Internal to src/collectives/.
#pragma once

#include <cstdint>

#include "collectives/tags.h"
#include "mtf/collectives.h"

namespace mtf::collectives {

size_t element_size(DType dtype);  // bytes per element (bfloat16: 2)
// dst[i] = op(dst[i], src[i]) for count elements.
void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op);
// ValueError unless g names the transport's rank at g.index, sizes are sane.
void check_group(const Transport& t, const Group& g, const char* what);

// Chunk c of a ring of n chunks over elements [lo, hi): [begin, end).
struct ChunkRange {
  int64_t begin, end;
};
inline ChunkRange chunk_of(int64_t lo, int64_t hi, int n, int c) {
  const int64_t len = hi - lo;
  return {lo + len * c / n, lo + len * (c + 1) / n};
}
// How many segments carry `elems` elements of `elem_size` bytes, each of at
// most the transport's ring_segment_bytes() (1 when it says 0: whole).
// Segment j of a range is chunk_of(range, segments, j).
int segment_count(const Transport& t, int64_t elems, size_t elem_size);

}  // namespace mtf::collectives
