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

// One ring pass over a buffer region: n-1 steps in which each position sends
// one chunk to the next rank of `order` and receives one from the previous.
// kind: reduce-scatter (received chunks are reduced in) or allgather
// (received chunks overwrite). `owner_shift` k: after a reduce-scatter,
// position i holds the finished chunk (i + k) mod n; an allgather starts from
// that state.
class RingPass {
 public:
  enum class Kind { kReduceScatter, kAllgather };
  RingPass(Transport& t, std::vector<int> order, int position, char* data, int64_t lo, int64_t hi,
           DType dtype, ReduceOp op, Kind kind, int owner_shift, uint64_t tag);
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
