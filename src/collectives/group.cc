#include <algorithm>

#include "core/check.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {

int Group::rank_at(int steps) const {
  const int n = size();
  return ranks[((index + steps) % n + n) % n];
}

Group Group::all(int size, int rank) {
  Group g;
  for (int r = 0; r < size; ++r) g.ranks.push_back(r);
  g.index = rank;
  return g;
}

Group Group::along_axes(const MeshShape& mesh, int64_t pnum, const std::vector<int>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= mesh.ndims() ||
        std::count(axes.begin(), axes.end(), axes[i]) > 1) {
      throw ValueError(detail::str_cat("Group::along_axes: axis ", axes[i],
                                       " is repeated or not an axis of mesh \"", mesh.to_string(),
                                       "\""));
    }
  }
  if (pnum < 0 || pnum >= mesh.size()) {
    throw ValueError(detail::str_cat("Group::along_axes: processor ", pnum, " is not in mesh \"",
                                     mesh.to_string(), "\""));
  }
  const std::vector<int64_t> home = mesh.coordinates(pnum);
  int64_t members = 1;
  for (int a : axes) members *= mesh.dims()[a].size;
  Group g;
  g.ranks.reserve(static_cast<size_t>(members));
  std::vector<int64_t> c = home;
  for (int64_t m = 0; m < members; ++m) {
    int64_t rest = m;
    for (int j = static_cast<int>(axes.size()) - 1; j >= 0; --j) {
      const int64_t n = mesh.dims()[axes[j]].size;
      c[axes[j]] = rest % n;
      rest /= n;
    }
    g.ranks.push_back(static_cast<int>(mesh.pnum(c)));
  }
  // This processor's member number: its coordinates along `axes`, mixed radix.
  int64_t index = 0;
  for (int a : axes) index = index * mesh.dims()[a].size + home[a];
  g.index = static_cast<int>(index);
  return g;
}

}  // namespace mtf
