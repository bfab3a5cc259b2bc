// Ring reduce-scatter: n-1 steps, each rank ends with its own block reduced.
#include <cstring>
#include <vector>

#include "collectives/ring_pass.h"

namespace mtf {

void reduce_scatter(Transport& t, const Group& g, const void* in, void* out, int64_t block,
                    DType dtype, ReduceOp op, uint64_t tag) {
  collectives::check_group(t, g, "reduce_scatter");
  const size_t es = collectives::element_size(dtype);
  const int n = g.size();
  const bool data = t.carries_data();
  std::vector<char> work(data ? static_cast<size_t>(block) * n * es : 0);
  if (!work.empty()) std::memcpy(work.data(), in, work.size());
  if (n > 1) {
    std::vector<collectives::RingPass> pass;
    collectives::RingPassSpec spec;
    spec.kind = collectives::RingPassKind::kReduceScatter;
    spec.order = g.ranks;
    spec.position = g.index;
    spec.data = work.data();
    spec.hi = block * n;
    spec.dtype = dtype;
    spec.op = op;
    spec.tag = collectives::subtag(tag, collectives::Channel::kOnly);
    pass.emplace_back(t, std::move(spec));
    collectives::run_lockstep(pass);
  }
  if (block && data) std::memcpy(out, work.data() + g.index * block * es, block * es);
}

}  // namespace mtf
