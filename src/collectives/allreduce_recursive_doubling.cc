// Recursive-doubling allreduce, for small buffers where latency dominates:
// log2(p) exchanges instead of the ring's 2(p-1) steps. Groups whose size is
// not a power of two first fold their extra members into a partner (and
// hand them the result at the end), as MPICH does. Partners combine the same
// two operands (op is commutative), so every member ends with the same bits.
#include <vector>

#include "collectives/ring.h"

namespace mtf::collectives {

void allreduce_recursive_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                  DType dtype, ReduceOp op, uint64_t tag) {
  const int n = g.size(), i = g.index;
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const bool real = t.carries_data();
  std::vector<char> other(real ? bytes : 0);
  const uint64_t channel = subtag(tag, 5);
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int rem = n - pof2;
  int newrank;
  if (i < 2 * rem) {
    if (i % 2 == 0) {
      t.send(g.ranks[i + 1], channel, data, bytes);
      newrank = -1;
    } else {
      t.recv(g.ranks[i - 1], channel, other.data(), bytes);
      if (real) reduce_into(data, other.data(), count, dtype, op);
      newrank = i / 2;
    }
  } else {
    newrank = i - rem;
  }
  if (newrank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int partner_new = newrank ^ mask;
      const int partner = partner_new < rem ? partner_new * 2 + 1 : partner_new + rem;
      t.exchange({SendSpec{g.ranks[partner], channel, data, bytes}},
                 {RecvSpec{g.ranks[partner], channel, other.data(), bytes}});
      if (real) reduce_into(data, other.data(), count, dtype, op);
    }
  }
  if (i < 2 * rem) {
    if (i % 2 == 1) {
      t.send(g.ranks[i - 1], channel, data, bytes);
    } else {
      t.recv(g.ranks[i + 1], channel, data, bytes);
    }
  }
}

}  // namespace mtf::collectives
