// Recursive allreduces, for buffers where the number of steps matters more
// than the ring's even use of links:
// - recursive doubling (small buffers): log2(p) exchanges of the whole buffer;
// - halving-doubling (Rabenseifner; mid-size buffers on more than two
//   ranks): a reduce-scatter by recursive halving, then an allgather by
//   recursive doubling — the ring's traffic in 2 log2(p) steps instead of
//   2(p-1).
// Groups whose size is not a power of two first fold their extra members
// into a partner (and hand them the result at the end), as MPICH does.
// Every element is reduced from the same operands in the same order on
// every member (op is commutative), so every member ends with the same bits.
#include <algorithm>
#include <memory>
#include <vector>

#include "collectives/allreduce_algorithms.h"
#include "collectives/common.h"
#include "core/buffer_pool.h"

namespace mtf::collectives {
namespace {

// The power-of-two core of a group of n: members i < 2*rem pair up, the
// even one of each pair folding its data into the odd one.
struct Fold {
  int pof2 = 1, rem = 0;
  explicit Fold(int n) {
    while (pof2 * 2 <= n) pof2 *= 2;
    rem = n - pof2;
  }
  // Position in the core of member i, or -1 for a member folded away.
  int core_rank(int i) const {
    if (i < 2 * rem) return i % 2 == 0 ? -1 : i / 2;
    return i - rem;
  }
  // The member at core position c.
  int member(int c) const { return c < rem ? c * 2 + 1 : c + rem; }
};

void fold_in(Transport& t, const Group& g, const Fold& f, void* data, void* scratch, int64_t count,
             DType dtype, ReduceOp op, uint64_t channel) {
  const int i = g.index;
  if (i >= 2 * f.rem) return;
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  if (i % 2 == 0) {
    t.send(g.ranks[i + 1], channel, data, bytes);
  } else {
    t.recv(g.ranks[i - 1], channel, scratch, bytes);
    if (t.carries_data()) reduce_into(data, scratch, count, dtype, op);
  }
}

void fold_out(Transport& t, const Group& g, const Fold& f, void* data, int64_t count, DType dtype,
              uint64_t channel) {
  const int i = g.index;
  if (i >= 2 * f.rem) return;
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  if (i % 2 == 1) {
    t.send(g.ranks[i - 1], channel, data, bytes);
  } else {
    t.recv(g.ranks[i + 1], channel, data, bytes);
  }
}

}  // namespace

namespace {

// Recursive doubling as the rounds one member takes part in, which both
// run it and describe it to a transport that times it at once: the fold
// (if any), log2(pof2) exchanges of the whole buffer, the unfold (if any).
// A received buffer is reduced into the data, except the unfold's, which
// replaces it (the last round when the group folds). Every member has the
// same number of rounds.
ExchangeRoundsTiming recursive_doubling_rounds(const Group& g, size_t bytes, uint64_t channel,
                                               bool* unfolds) {
  const Fold f(g.size());
  const int i = g.index;
  const bool folds = i < 2 * f.rem;
  ExchangeRoundsTiming timing;
  timing.group = &g.ranks;
  timing.position = g.index;
  timing.tag = channel;
  std::vector<ExchangeRound>& rounds = timing.rounds;
  int steps = 0;
  for (int mask = 1; mask < f.pof2; mask <<= 1) ++steps;
  rounds.reserve(static_cast<size_t>(steps + (f.rem > 0 ? 2 : 0)));
  if (f.rem > 0) {
    ExchangeRound r;
    if (folds && i % 2 == 0) r.send_to = g.ranks[i + 1];
    if (folds && i % 2 == 1) r.recv_from = g.ranks[i - 1];
    rounds.push_back(r);
  }
  const int me = f.core_rank(i);
  for (int mask = 1; mask < f.pof2; mask <<= 1) {
    ExchangeRound r;
    if (me >= 0) r.send_to = r.recv_from = g.ranks[f.member(me ^ mask)];
    rounds.push_back(r);
  }
  if (f.rem > 0) {
    ExchangeRound r;
    if (folds && i % 2 == 1) r.send_to = g.ranks[i - 1];
    if (folds && i % 2 == 0) r.recv_from = g.ranks[i + 1];
    rounds.push_back(r);
  }
  for (ExchangeRound& r : rounds) {
    if (r.send_to >= 0) r.send_bytes = bytes;
    if (r.recv_from >= 0) r.recv_bytes = bytes;
  }
  *unfolds = f.rem > 0;
  return timing;
}

}  // namespace

void allreduce_recursive_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                  DType dtype, ReduceOp op, uint64_t tag) {
  const size_t bytes = static_cast<size_t>(count) * element_size(dtype);
  const uint64_t channel = subtag(tag, Channel::kRecursiveDoubling);
  bool unfolds = false;
  const ExchangeRoundsTiming timing = recursive_doubling_rounds(g, bytes, channel, &unfolds);
  if (t.time_exchange_rounds(timing) && !t.carries_data()) return;
  // Small buffers' partner copies go on the stack; larger ones in pooled
  // memory (no page faults per call).
  alignas(64) unsigned char small[512];
  std::shared_ptr<detail::Buffer> scratch;
  void* other = nullptr;
  if (t.carries_data()) {
    if (bytes > sizeof(small)) scratch = detail::allocate_buffer(bytes);
    other = scratch ? scratch->data : small;
  }
  const size_t last = timing.rounds.size() - 1;
  for (size_t k = 0; k < timing.rounds.size(); ++k) {
    const ExchangeRound& r = timing.rounds[k];
    const int to = r.send_to, from = r.recv_from;
    const bool reduce = !(unfolds && k == last);
    void* into = reduce ? other : data;
    if (to >= 0 && from >= 0) {
      t.exchange({SendSpec{to, channel, data, bytes}}, {RecvSpec{from, channel, into, bytes}});
    } else if (to >= 0) {
      t.send(to, channel, data, bytes);
    } else if (from >= 0) {
      t.recv(from, channel, into, bytes);
    }
    if (from >= 0 && reduce && t.carries_data()) reduce_into(data, other, count, dtype, op);
  }
}

void allreduce_halving_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                DType dtype, ReduceOp op, uint64_t tag) {
  const size_t es = element_size(dtype);
  const bool real = t.carries_data();
  char* d = static_cast<char*>(data);
  const uint64_t channel = subtag(tag, Channel::kHalvingDoubling);
  const Fold f(g.size());
  // Exchanges of a halving round go in segments, as ring steps do; the
  // first round's are the largest.
  const int64_t half = (count + 1) / 2;
  const int first_segments = segment_count(t, half, es);
  const int64_t largest_segment = (half + first_segments - 1) / first_segments;
  std::shared_ptr<detail::Buffer> scratch;
  if (real) {
    scratch = detail::allocate_buffer(
        static_cast<size_t>(g.index < 2 * f.rem ? count : largest_segment) * es);
  }
  void* tmp = scratch ? scratch->data : nullptr;
  fold_in(t, g, f, data, tmp, count, dtype, op, channel);
  if (const int me = f.core_rank(g.index); me >= 0) {
    // Reduce-scatter: each round keeps half of the range, reduced with the
    // partner's copy of it; the ranges are replayed backwards to gather.
    struct Round {
      int partner;
      ChunkRange kept, given;
    };
    std::vector<Round> rounds;
    ChunkRange r{0, count};
    for (int mask = f.pof2 / 2; mask >= 1; mask /= 2) {
      const int64_t mid = r.begin + (r.end - r.begin + 1) / 2;
      const ChunkRange lower{r.begin, mid}, upper{mid, r.end};
      const bool keep_lower = (me & mask) == 0;
      rounds.push_back(
          {g.ranks[f.member(me ^ mask)], keep_lower ? lower : upper, keep_lower ? upper : lower});
      const Round& x = rounds.back();
      const int64_t longest = std::max(x.kept.end - x.kept.begin, x.given.end - x.given.begin);
      const int m = segment_count(t, longest, es);
      for (int j = 0; j < m; ++j) {
        const ChunkRange out = chunk_of(x.given.begin, x.given.end, m, j);
        const ChunkRange in = chunk_of(x.kept.begin, x.kept.end, m, j);
        t.exchange(
            {SendSpec{x.partner, channel, d + out.begin * es,
                      static_cast<size_t>(out.end - out.begin) * es}},
            {RecvSpec{x.partner, channel, tmp, static_cast<size_t>(in.end - in.begin) * es}});
        if (real) reduce_into(d + in.begin * es, tmp, in.end - in.begin, dtype, op);
      }
      r = x.kept;
    }
    // Allgather: the same partners in reverse; each sends what it holds and
    // receives the partner's half straight into place.
    for (auto x = rounds.rbegin(); x != rounds.rend(); ++x) {
      t.exchange({SendSpec{x->partner, channel, d + x->kept.begin * es,
                           static_cast<size_t>(x->kept.end - x->kept.begin) * es}},
                 {RecvSpec{x->partner, channel, d + x->given.begin * es,
                           static_cast<size_t>(x->given.end - x->given.begin) * es}});
    }
  }
  fold_out(t, g, f, data, count, dtype, channel);
}

}  // namespace mtf::collectives
