#include "collectives/ring.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::collectives {

int segment_count(const Transport& t, int64_t elems, size_t elem_size) {
  const size_t seg = t.ring_segment_bytes();
  if (seg == 0) return 1;
  const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(seg / elem_size));
  return static_cast<int>(std::max<int64_t>(1, (elems + per - 1) / per));
}

size_t element_size(DType dtype) {
  if (dtype != float32 && dtype != int32) {
    throw DTypeError("collectives support float32 and int32, not " + dtype_name(dtype));
  }
  return 4;
}

namespace {
template <typename T>
void reduce_typed(T* d, const T* s, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      for (int64_t i = 0; i < n; ++i) d[i] += s[i];
      return;
    case ReduceOp::kMax:
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] > d[i] ? s[i] : d[i];
      return;
    case ReduceOp::kMin:
      for (int64_t i = 0; i < n; ++i) d[i] = s[i] < d[i] ? s[i] : d[i];
      return;
  }
}
}  // namespace

void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op) {
  if (dtype == float32) {
    reduce_typed(static_cast<float*>(dst), static_cast<const float*>(src), count, op);
  } else {
    reduce_typed(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count, op);
  }
}

void check_group(const Transport& t, const Group& g, const char* what) {
  if (g.size() < 1 || g.index < 0 || g.index >= g.size()) {
    throw ValueError(
        detail::str_cat(what, ": group position ", g.index, " is outside a group of ", g.size()));
  }
  if (g.ranks[g.index] != t.rank()) {
    throw ValueError(detail::str_cat(what, ": the group puts rank ", g.ranks[g.index],
                                     " at position ", g.index, " but the caller is rank ",
                                     t.rank()));
  }
  std::set<int> seen;
  for (int r : g.ranks) {
    if (r < 0 || r >= t.size() || !seen.insert(r).second) {
      throw ValueError(detail::str_cat(what, ": group rank ", r,
                                       " is repeated or outside the job of ", t.size(), " ranks"));
    }
  }
}

RingPass::RingPass(Transport& t, std::vector<int> order, int position, char* data, int64_t lo,
                   int64_t hi, DType dtype, ReduceOp op, Kind kind, int owner_shift, uint64_t tag)
    : t_(t),
      order_(std::move(order)),
      pos_(position),
      n_(static_cast<int>(order_.size())),
      data_(data),
      lo_(lo),
      hi_(hi),
      dtype_(dtype),
      es_(element_size(dtype)),
      op_(op),
      kind_(kind),
      k_(owner_shift),
      tag_(tag) {
  int64_t largest = 0;
  for (int c = 0; c < n_; ++c) {
    const ChunkRange r = chunk_of(lo_, hi_, n_, c);
    largest = std::max(largest, r.end - r.begin);
  }
  // Segments: as many as the largest chunk needs, the same on every rank.
  m_ = segment_count(t_, largest, es_);
  if (kind_ == Kind::kReduceScatter && t_.carries_data())
    scratch_ = detail::allocate_buffer(static_cast<size_t>((largest + m_ - 1) / m_) * es_);
}

SendSpec RingPass::send_spec(int s, int j) const {
  const int c = kind_ == Kind::kReduceScatter ? mod(pos_ + k_ - 1 - s) : mod(pos_ + k_ - s);
  const ChunkRange r = segment(chunk_of(lo_, hi_, n_, c), j);
  return {order_[mod(pos_ + 1)], tag_, data_ + r.begin * es_,
          static_cast<size_t>(r.end - r.begin) * es_};
}

RecvSpec RingPass::recv_spec(int s, int j) {
  const ChunkRange r = segment(recv_chunk(s), j);
  const size_t bytes = static_cast<size_t>(r.end - r.begin) * es_;
  const int from = order_[mod(pos_ - 1)];
  if (kind_ == Kind::kAllgather) return {from, tag_, data_ + r.begin * es_, bytes};
  return {from, tag_, scratch_ ? scratch_->data : nullptr, bytes};
}

void RingPass::finish_recv(int s, int j) {
  if (kind_ == Kind::kAllgather || !t_.carries_data()) return;
  const ChunkRange r = segment(recv_chunk(s), j);
  reduce_into(data_ + r.begin * es_, scratch_->data, r.end - r.begin, dtype_, op_);
}

ChunkRange RingPass::recv_chunk(int s) const {
  const int c = kind_ == Kind::kReduceScatter ? mod(pos_ + k_ - 2 - s) : mod(pos_ + k_ - 1 - s);
  return chunk_of(lo_, hi_, n_, c);
}

void run_lockstep(std::vector<RingPass>& passes) {
  if (passes.empty()) return;
  const int steps = passes[0].steps();
  int most = 1;
  for (const auto& p : passes) most = std::max(most, p.segments());
  std::vector<SendSpec> sends;
  std::vector<RecvSpec> recvs;
  for (int s = 0; s < steps; ++s) {
    for (int j = 0; j < most; ++j) {
      sends.clear();
      recvs.clear();
      for (auto& p : passes) {
        if (j >= p.segments()) continue;
        sends.push_back(p.send_spec(s, j));
        recvs.push_back(p.recv_spec(s, j));
      }
      passes[0].transport().exchange(sends, recvs);
      for (auto& p : passes)
        if (j < p.segments()) p.finish_recv(s, j);
    }
  }
}

}  // namespace mtf::collectives
