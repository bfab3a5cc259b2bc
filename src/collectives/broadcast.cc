// Broadcast pipelined along the ring from the root: each chunk is forwarded
// as soon as it arrives, so large buffers cost about one ring traversal.
#include <algorithm>

#include "collectives/common.h"
#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

void broadcast(Transport& t, const Group& g, void* data, int64_t count, DType dtype, int root,
               uint64_t tag) {
  collectives::check_group(t, g, "broadcast");
  const size_t es = collectives::element_size(dtype);
  const int n = g.size();
  if (root < 0 || root >= n) {
    throw ValueError(
        detail::str_cat("broadcast: root position ", root, " is outside a group of ", n));
  }
  if (n == 1 || count == 0) return;
  const int distance = ((g.index - root) % n + n) % n;  // hops from the root
  constexpr int64_t kChunk = 64 * 1024;                 // elements per pipelined piece
  char* p = static_cast<char*>(data);
  for (int64_t at = 0; at < count; at += kChunk) {
    const int64_t len = std::min(kChunk, count - at);
    if (distance > 0)
      t.recv(g.rank_at(-1), collectives::subtag(tag, collectives::Channel::kOnly), p + at * es,
             len * es);
    if (distance < n - 1)
      t.send(g.rank_at(1), collectives::subtag(tag, collectives::Channel::kOnly), p + at * es,
             len * es);
  }
}

}  // namespace mtf
