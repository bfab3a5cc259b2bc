// Dissemination barrier: ceil(log2 n) rounds; in round r each position
// signals the one 2^r ahead and waits for the one 2^r behind.
#include "collectives/common.h"

namespace mtf {

void barrier(Transport& t, const Group& g, uint64_t tag) {
  collectives::check_group(t, g, "barrier");
  const int n = g.size();
  int round = 0;
  for (int step = 1; step < n; step *= 2, ++round) {
    const char token = 1;
    char got = 0;
    t.send(g.rank_at(step), collectives::subtag(tag, collectives::barrier_round(round)), &token, 1);
    t.recv(g.rank_at(-step), collectives::subtag(tag, collectives::barrier_round(round)), &got, 1);
  }
}

}  // namespace mtf
