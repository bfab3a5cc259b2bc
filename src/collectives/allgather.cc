// Ring allgather (allconcat): n-1 steps, each forwarding one block.
#include <cstring>
#include <vector>

#include "collectives/ring_pass.h"

namespace mtf {

void allgather(Transport& t, const Group& g, const void* in, void* out, int64_t block, DType dtype,
               uint64_t tag) {
  collectives::check_group(t, g, "allgather");
  const size_t es = collectives::element_size(dtype);
  const int n = g.size();
  char* o = static_cast<char*>(out);
  if (block && t.carries_data()) std::memcpy(o + g.index * block * es, in, block * es);
  if (n == 1) return;
  std::vector<collectives::RingPass> pass;
  collectives::RingPassSpec spec;
  spec.kind = collectives::RingPassKind::kAllgather;
  spec.order = g.ranks;
  spec.position = g.index;
  spec.data = o;
  spec.hi = block * n;
  spec.dtype = dtype;
  spec.op = ReduceOp::kSum;
  spec.tag = collectives::subtag(tag, collectives::Channel::kOnly);
  pass.emplace_back(t, std::move(spec));
  collectives::run_lockstep(pass);
}

}  // namespace mtf
