// ring_pass.h — a ring pass engine that runs reduce-scatter / allgather
// passes of one or two rings in lockstep (so a bidirectional allreduce keeps
// both directions of each link busy). Used by the ring allreduce,
// reduce-scatter and allgather. Internal to src/collectives/.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/common.h"
#include "core/buffer_pool.h"

namespace mtf::collectives {

enum class RingPassKind { kReduceScatter, kAllgather };

// What one ring pass does.
struct RingPassSpec {
  // Reduce-scatter: received chunks are reduced in (with `op`); allgather:
  // they overwrite.
  RingPassKind kind = RingPassKind::kAllgather;
  std::vector<int> order;  // the ring's ranks, in order
  int position = 0;        // this rank's index in `order`
  char* data = nullptr;    // the buffer; the pass covers its elements [lo, hi)
  int64_t lo = 0, hi = 0;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  // k: after a reduce-scatter, position i holds the finished chunk
  // (i + k) mod n; an allgather starts from that state.
  int owner_shift = 0;
  uint64_t tag = 0;  // every message's tag (the caller's channel)
};

// One ring pass over a buffer region: n-1 steps in which each position sends
// one chunk to the next rank of `order` and receives one from the previous.
class RingPass {
 public:
  using Kind = RingPassKind;
  RingPass(Transport& t, RingPassSpec spec);
  // Step s: the message to send, the one to receive, and (after it is in)
  // reducing it into place for a reduce-scatter.
  // Each step moves its chunk in segments() pieces of at most the
  // transport's ring_segment_bytes(); (s, j) is segment j of step s.
  SendSpec send_spec(int s, int j) const;
  RecvSpec recv_spec(int s, int j);
  void finish_recv(int s, int j);
  int steps() const { return n_ - 1; }
  // The chunks this rank sends and receives, for Transport::time_ring_passes.
  void describe(RingPassTiming* t) const;
  int segments() const { return m_; }
  const std::vector<int>& order() const { return order_; }
  int position() const { return pos_; }
  uint64_t tag() const { return tag_; }
  Transport& transport() const { return t_; }

 private:
  ChunkRange recv_chunk(int s) const;
  ChunkRange segment(ChunkRange whole, int j) const {
    return chunk_of(whole.begin, whole.end, m_, j);
  }
  int mod(int x) const { return ((x % n_) + n_) % n_; }
  Transport& t_;
  std::vector<int> order_;
  int pos_, n_;
  char* data_;
  int64_t lo_, hi_;
  DType dtype_;
  size_t es_;
  ReduceOp op_;
  Kind kind_;
  int k_;
  uint64_t tag_;
  int m_ = 1;                                // segments per step
  std::shared_ptr<detail::Buffer> scratch_;  // pooled: no page faults per call
};

// Runs the passes' steps in lockstep: segment j of step s of every pass in
// one Transport::exchange (receives posted first), each received segment
// reduced as soon as it is in, while it is still in cache.
void run_lockstep(std::vector<RingPass>& passes);

}  // namespace mtf::collectives
