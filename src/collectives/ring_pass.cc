#include "collectives/ring_pass.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace mtf::collectives {

RingPass::RingPass(Transport& t, RingPassSpec spec)
    : t_(t),
      order_(std::move(spec.order)),
      pos_(spec.position),
      n_(static_cast<int>(order_.size())),
      data_(spec.data),
      lo_(spec.lo),
      hi_(spec.hi),
      dtype_(spec.dtype),
      es_(element_size(spec.dtype)),
      op_(spec.op),
      kind_(spec.kind),
      k_(spec.owner_shift),
      tag_(spec.tag) {
  // Chunks are len/n elements rounded down or up: the largest, rounded up.
  const int64_t largest = (hi_ - lo_ + n_ - 1) / n_;
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

void RingPass::describe(RingPassTiming* t) const {
  t->lo = lo_;
  t->hi = hi_;
  t->element_bytes = es_;
  t->send_chunk = kind_ == Kind::kReduceScatter ? mod(pos_ + k_ - 1) : mod(pos_ + k_);
  t->recv_chunk = kind_ == Kind::kReduceScatter ? mod(pos_ + k_ - 2) : mod(pos_ + k_ - 1);
}

ChunkRange RingPass::recv_chunk(int s) const {
  const int c = kind_ == Kind::kReduceScatter ? mod(pos_ + k_ - 2 - s) : mod(pos_ + k_ - 1 - s);
  return chunk_of(lo_, hi_, n_, c);
}

namespace {

// A simulated transport may time whole-chunk passes at once.
bool timed_at_once(std::vector<RingPass>& passes) {
  Transport& t = passes[0].transport();
  std::vector<RingPassTiming> timing(passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    RingPass& p = passes[i];
    if (p.segments() != 1) return false;
    RingPassTiming& pt = timing[i];
    pt.order = &p.order();
    pt.position = p.position();
    pt.tag = p.tag();
    p.describe(&pt);
  }
  return t.time_ring_passes(timing);
}

}  // namespace

void run_lockstep(std::vector<RingPass>& passes) {
  if (passes.empty()) return;
  const int steps = passes[0].steps();
  int most = 1;
  for (const auto& p : passes) most = std::max(most, p.segments());
  if (timed_at_once(passes) && !passes[0].transport().carries_data()) return;
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
