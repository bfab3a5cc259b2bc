// permute and shift: each position sends its whole buffer to at most one
// other; positions nobody sends to get zeros.
#include <cstring>
#include <vector>

#include "collectives/common.h"
#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

void permute(Transport& t, const Group& g, const void* in, void* out, int64_t count, DType dtype,
             const std::vector<int>& dest, uint64_t tag) {
  collectives::check_group(t, g, "permute");
  const size_t bytes = count * collectives::element_size(dtype);
  const int n = g.size(), i = g.index;
  if (static_cast<int>(dest.size()) != n) {
    throw ValueError(detail::str_cat("permute: ", dest.size(), " destinations for a group of ", n));
  }
  std::vector<int> source(n, -1);
  for (int p = 0; p < n; ++p) {
    if (dest[p] < -1 || dest[p] >= n || (dest[p] >= 0 && source[dest[p]] >= 0)) {
      throw ValueError(detail::str_cat("permute: destination ", dest[p], " of position ", p,
                                       " is out of range or taken twice"));
    }
    if (dest[p] >= 0) source[dest[p]] = p;
  }
  if (dest[i] >= 0 && dest[i] != i)
    t.send(g.ranks[dest[i]], collectives::subtag(tag, collectives::Channel::kOnly), in, bytes);
  if (source[i] < 0) {
    if (bytes && t.carries_data()) std::memset(out, 0, bytes);
  } else if (source[i] == i) {
    if (bytes && out != in && t.carries_data()) std::memmove(out, in, bytes);
  } else {
    t.recv(g.ranks[source[i]], collectives::subtag(tag, collectives::Channel::kOnly), out, bytes);
  }
}

void shift(Transport& t, const Group& g, const void* in, void* out, int64_t count, DType dtype,
           int offset, bool wrap, uint64_t tag) {
  const int n = g.size();
  std::vector<int> dest(n);
  for (int p = 0; p < n; ++p) {
    const int d = p + offset;
    dest[p] = wrap ? ((d % n) + n) % n : (d >= 0 && d < n ? d : -1);
  }
  permute(t, g, in, out, count, dtype, dest, tag);
}

}  // namespace mtf
