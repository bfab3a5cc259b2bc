// Pairwise alltoall: in step s every position sends to the one s ahead and
// receives from the one s behind, so no pair waits on another.
#include <cstring>

#include "collectives/common.h"

namespace mtf {

void alltoall(Transport& t, const Group& g, const void* in, void* out, int64_t block, DType dtype,
              uint64_t tag) {
  collectives::check_group(t, g, "alltoall");
  const size_t es = collectives::element_size(dtype);
  const int n = g.size(), i = g.index;
  const size_t bytes = block * es;
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (bytes && t.carries_data()) std::memcpy(dst + i * bytes, src + i * bytes, bytes);
  for (int s = 1; s < n; ++s) {
    const int to = (i + s) % n, from = (i - s + n) % n;
    t.send(g.ranks[to], collectives::subtag(tag, collectives::Channel::kOnly), src + to * bytes,
           bytes);
    t.recv(g.ranks[from], collectives::subtag(tag, collectives::Channel::kOnly), dst + from * bytes,
           bytes);
  }
}

}  // namespace mtf
