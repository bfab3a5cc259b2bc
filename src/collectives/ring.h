// ring.h — the pieces every collective shares: element sizes, elementwise
// reduction of buffers, sub-tags, and a ring pass engine that runs
// reduce-scatter / allgather passes of one or two rings in lockstep (so a
// bidirectional allreduce keeps both directions of each link busy).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/buffer_pool.h"
#include "mtf/collectives.h"

namespace mtf::collectives {

size_t element_size(DType dtype);  // ValueError for dtypes collectives lack
// dst[i] = op(dst[i], src[i]) for count elements.
void reduce_into(void* dst, const void* src, int64_t count, DType dtype, ReduceOp op);
// Tags of a collective's messages: the caller's tag and a sub-channel.
inline uint64_t subtag(uint64_t tag, int sub) { return (tag << 4) | static_cast<uint64_t>(sub); }
// ValueError unless g names the transport's rank at g.index, sizes are sane.
void check_group(const Transport& t, const Group& g, const char* what);

// Chunk c of a ring of n chunks over elements [lo, hi): [begin, end).
struct ChunkRange {
  int64_t begin, end;
};
inline ChunkRange chunk_of(int64_t lo, int64_t hi, int n, int c) {
  const int64_t len = hi - lo;
  return {lo + len * c / n, lo + len * (c + 1) / n};
}
// How many segments carry `elems` elements of `elem_size` bytes, each of at
// most the transport's ring_segment_bytes() (1 when it says 0: whole).
// Segment j of a range is chunk_of(range, segments, j).
int segment_count(const Transport& t, int64_t elems, size_t elem_size);

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
  int segments() const { return m_; }
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
// Allreduce by recursive doubling (allreduce_recursive_doubling.cc);
// allreduce() uses it for buffers of at most kSmallAllreduceBytes.
// (Measured across processes on loopback: it wins up to about 64 KiB.)
constexpr int64_t kSmallAllreduceBytes = 64 * 1024;
void allreduce_recursive_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                  DType dtype, ReduceOp op, uint64_t tag);
// Allreduce by recursive halving then doubling (Rabenseifner, same file);
// allreduce() uses it above kSmallAllreduceBytes up to
// kMidAllreduceBytes on more than two ranks.
constexpr int64_t kMidAllreduceBytes = 1024 * 1024;
void allreduce_halving_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                DType dtype, ReduceOp op, uint64_t tag);

void run_lockstep(std::vector<RingPass>& passes);

}  // namespace mtf::collectives
