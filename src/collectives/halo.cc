// halo_exchange: each position of a ring receives the rows of its window
// (HaloWindows) from whichever positions hold them, in one exchange().
#include <cstring>
#include <vector>

#include "collectives/common.h"
#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

// Copies rows [first, first + rows) of a [outer, len, inner] tensor to or
// from a packed [outer, rows, inner] buffer.
void copy_rows(const char* from, int64_t from_len, int64_t from_row, char* to, int64_t to_len,
               int64_t to_row, int64_t rows, int64_t outer, size_t row_bytes) {
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(to + (o * to_len + to_row) * row_bytes,
                from + (o * from_len + from_row) * row_bytes, rows * row_bytes);
  }
}

}  // namespace

void halo_exchange(Transport& t, const Group& g, const void* in, void* out, int64_t outer,
                   int64_t inner, DType dtype, const HaloWindows& w, uint64_t tag) {
  collectives::check_group(t, g, "halo_exchange");
  if (w.parts() != g.size() || w.block * g.size() != w.whole || w.extent < 0) {
    throw ValueError(detail::str_cat("halo_exchange: windows for ", w.parts(), " positions of ",
                                     w.block, " rows (", w.whole, " in all) on a group of ",
                                     g.size()));
  }
  const size_t row_bytes = inner * collectives::element_size(dtype);
  const int me = g.index;
  const bool data = t.carries_data();
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  std::vector<std::vector<char>> packed;
  std::vector<SendSpec> sends;
  std::vector<RecvSpec> recvs;
  std::vector<std::pair<int64_t, int64_t>> incoming;
  packed.reserve(g.size());
  for (int q = 0; q < g.size(); ++q) {
    if (q == me) continue;
    const auto [lo, hi] = w.piece(me, q);
    if (hi > lo) {
      const size_t bytes = outer * (hi - lo) * row_bytes;
      packed.emplace_back(data ? bytes : 0);
      if (data) {
        copy_rows(src, w.block, lo - me * w.block, packed.back().data(), hi - lo, 0, hi - lo, outer,
                  row_bytes);
      }
      sends.push_back({g.ranks[q], collectives::subtag(tag, collectives::Channel::kOnly),
                       packed.back().data(), bytes});
    }
  }
  for (int q = 0; q < g.size(); ++q) {
    if (q == me) continue;
    const auto [lo, hi] = w.piece(q, me);
    if (hi > lo) incoming.push_back({lo, hi});
  }
  std::vector<std::vector<char>> received(incoming.size());
  for (int q = 0, k = 0; q < g.size(); ++q) {
    if (q == me) continue;
    const auto [lo, hi] = w.piece(q, me);
    if (hi <= lo) continue;
    const size_t bytes = outer * (hi - lo) * row_bytes;
    received[k].resize(data ? bytes : 0);
    recvs.push_back({g.ranks[q], collectives::subtag(tag, collectives::Channel::kOnly),
                     received[k].data(), bytes});
    ++k;
  }
  t.exchange(sends, recvs);
  if (!data) return;
  const int64_t base = w.begin[me];
  std::memset(dst, 0, outer * w.extent * row_bytes);
  const auto [own_lo, own_hi] = w.piece(me, me);
  if (own_hi > own_lo) {
    copy_rows(src, w.block, own_lo - me * w.block, dst, w.extent, own_lo - base, own_hi - own_lo,
              outer, row_bytes);
  }
  for (size_t k = 0; k < incoming.size(); ++k) {
    const auto [lo, hi] = incoming[k];
    copy_rows(received[k].data(), hi - lo, 0, dst, w.extent, lo - base, hi - lo, outer, row_bytes);
  }
}

}  // namespace mtf
