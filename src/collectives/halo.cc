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
  // The rows a list of pieces holds together.
  auto rows_of = [&](const std::vector<HaloPiece>& pieces) {
    int64_t rows = 0;
    for (const HaloPiece& p : pieces) rows += p.last - p.first;
    return rows;
  };
  std::vector<std::vector<char>> packed;
  std::vector<SendSpec> sends;
  std::vector<RecvSpec> recvs;
  packed.reserve(g.size());
  for (int q = 0; q < g.size(); ++q) {
    if (q == me) continue;
    const std::vector<HaloPiece> pieces = w.pieces(me, q);
    const int64_t rows = rows_of(pieces);
    if (rows == 0) continue;
    const size_t bytes = outer * rows * row_bytes;
    packed.emplace_back(data ? bytes : 0);
    if (data) {  // the pieces one after another, in window order
      int64_t at = 0;
      for (const HaloPiece& p : pieces) {
        copy_rows(src, w.block, p.first - me * w.block, packed.back().data(), rows, at,
                  p.last - p.first, outer, row_bytes);
        at += p.last - p.first;
      }
    }
    sends.push_back({g.ranks[q], collectives::subtag(tag, collectives::Channel::kOnly),
                     packed.back().data(), bytes});
  }
  std::vector<std::vector<HaloPiece>> incoming;
  std::vector<std::vector<char>> received;
  received.reserve(g.size());
  for (int q = 0; q < g.size(); ++q) {
    if (q == me) continue;
    std::vector<HaloPiece> pieces = w.pieces(q, me);
    const int64_t rows = rows_of(pieces);
    if (rows == 0) continue;
    const size_t bytes = outer * rows * row_bytes;
    received.emplace_back(data ? bytes : 0);
    incoming.push_back(std::move(pieces));
    recvs.push_back({g.ranks[q], collectives::subtag(tag, collectives::Channel::kOnly),
                     received.back().data(), bytes});
  }
  t.exchange(sends, recvs);
  if (!data) return;
  std::memset(dst, 0, outer * w.extent * row_bytes);
  for (const HaloPiece& p : w.pieces(me, me)) {
    copy_rows(src, w.block, p.first - me * w.block, dst, w.extent, p.at, p.last - p.first, outer,
              row_bytes);
  }
  for (size_t k = 0; k < incoming.size(); ++k) {
    const int64_t rows = rows_of(incoming[k]);
    int64_t from = 0;
    for (const HaloPiece& p : incoming[k]) {
      copy_rows(received[k].data(), rows, from, dst, w.extent, p.at, p.last - p.first, outer,
                row_bytes);
      from += p.last - p.first;
    }
  }
}

}  // namespace mtf
