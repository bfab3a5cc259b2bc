// exchange_scenario.h — one test scenario for every Transport's exchange():
// two or more ranks in a ring, each round sending an early message before the
// exchange, then, in one exchange, two large and one small message to the
// next rank (two with one tag), one large message to the previous rank, and
// receives posted in another order than the peers send. Every payload must
// arrive intact and in order per (peer, tag), wherever it lands (queued
// before the exchange, copied in place, queued meanwhile).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "mtf/transport.h"

namespace mtf::testing {

inline std::vector<int32_t> exchange_pattern(int from, int k, size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from * 1000000 + k * 1000 + static_cast<int32_t>(i % 997);
  return v;
}

inline void exchange_scenario(Transport& t, int rounds, size_t big) {
  ASSERT_GE(t.size(), 2);
  const int n = t.size(), next = (t.rank() + 1) % n, prev = (t.rank() + n - 1) % n;
  const size_t small = 10;
  for (int round = 0; round < rounds; ++round) {
    const int k = 10 * round;
    const auto early = exchange_pattern(t.rank(), k, small);
    t.send(next, 3, early.data(), small * 4);
    const auto a = exchange_pattern(t.rank(), k + 1, big),
               b = exchange_pattern(t.rank(), k + 2, big),
               c = exchange_pattern(t.rank(), k + 3, small),
               d = exchange_pattern(t.rank(), k + 4, big);
    std::vector<int32_t> ra(big), rb(big), rc(small), rd(big), re(small);
    t.exchange({{next, 3, a.data(), big * 4},
                {next, 4, c.data(), small * 4},
                {next, 3, b.data(), big * 4},
                {prev, 7, d.data(), big * 4}},
               {{prev, 4, rc.data(), small * 4},
                {next, 7, rd.data(), big * 4},
                {prev, 3, re.data(), small * 4},
                {prev, 3, ra.data(), big * 4},
                {prev, 3, rb.data(), big * 4}});
    ASSERT_EQ(re, exchange_pattern(prev, k, small)) << "round " << round;
    ASSERT_EQ(ra, exchange_pattern(prev, k + 1, big)) << "round " << round;
    ASSERT_EQ(rb, exchange_pattern(prev, k + 2, big)) << "round " << round;
    ASSERT_EQ(rc, exchange_pattern(prev, k + 3, small)) << "round " << round;
    ASSERT_EQ(rd, exchange_pattern(next, k + 4, big)) << "round " << round;
  }
}

}  // namespace mtf::testing
