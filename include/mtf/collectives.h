// mtf/collectives.h — collectives over a group of ranks, written only
// against mtf::Transport (so they run in process, in the simulator, over TCP
// and over MPI alike).
//
// A Group is the list of ranks taking part, in ring order, and the caller's
// position in it. Group::along_axes gives the processors of a mesh that
// differ from one processor only in the given mesh axes, ordered row-major
// over those axes: for one axis, the torus ring of that axis. Multi-axis
// collectives (allreduce_over_axes) go axis by axis.
//
// Every member of a group must make the same calls in the same order with
// the same sizes; `tag` (distinct per concurrent collective, e.g. a sequence
// number) keeps their messages apart. Reduction order depends only on the
// group and the sizes, so a repeated run gives the same bits on every rank.
// Buffers hold `count` elements of float32 or int32.
#pragma once

#include <cstdint>
#include <vector>

#include "mtf/dtype.h"
#include "mtf/layout.h"
#include "mtf/reduce_op.h"
#include "mtf/transport.h"

namespace mtf {

struct Group {
  std::vector<int> ranks;  // ring order
  int index = 0;           // the caller's position in `ranks`

  int size() const { return static_cast<int>(ranks.size()); }
  // Rank `steps` positions further round the ring (negative: backwards).
  int rank_at(int steps) const;

  // All `size` ranks of a job, in rank order.
  static Group all(int size, int rank);
  // The processors of `mesh` that differ from `pnum` only in `axes`.
  static Group along_axes(const MeshShape& mesh, int64_t pnum, const std::vector<int>& axes);
};

// How allreduce combines the group's buffers. kAuto (the default) picks by
// size and network: recursive doubling (log2(size) exchanges of the whole
// buffer) up to 64 KiB; halving-doubling (the ring's traffic in 2 log2(size)
// steps) up to 1 MiB on more than two ranks when the transport's
// flat_network() says every pair of ranks is equally near; otherwise the
// bidirectional ring (reduce-scatter then allgather, half of the buffer
// clockwise and half counter-clockwise). When the group spans machines
// (Transport::machines()) and some machine holds two or more of its ranks,
// kAuto goes hierarchical instead: a reduce-scatter within each machine, an
// allreduce of each piece between machines (by the rules above, one rank per
// machine), then an allgather within each machine, so only 1/k of the buffer
// leaves a machine of k ranks per rank (machines holding unequal numbers of
// the group's ranks: reduce to one rank per machine, allreduce between
// those, broadcast within). Every member must pass the same. Float sums then
// round differently than on one machine (reproducible mode sums by
// gathering, which is exact either way).
enum class AllreduceAlgorithm { kAuto, kRing, kRecursiveDoubling, kHalvingDoubling, kHierarchical };

// data <- op over the group of everyone's data.
void allreduce(Transport& t, const Group& g, void* data, int64_t count, DType dtype, ReduceOp op,
               uint64_t tag, AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);
// The same over several mesh axes, one axis after another.
void allreduce_over_axes(Transport& t, const MeshShape& mesh, int64_t pnum,
                         const std::vector<int>& axes, void* data, int64_t count, DType dtype,
                         ReduceOp op, uint64_t tag);
// in: size() blocks of `block` elements; out: block index of the reduction.
void reduce_scatter(Transport& t, const Group& g, const void* in, void* out, int64_t block,
                    DType dtype, ReduceOp op, uint64_t tag);
// in: `block` elements; out: size() blocks, block j from position j.
void allgather(Transport& t, const Group& g, const void* in, void* out, int64_t block, DType dtype,
               uint64_t tag);
// in: size() blocks, block j for position j; out: block j from position j.
void alltoall(Transport& t, const Group& g, const void* in, void* out, int64_t block, DType dtype,
              uint64_t tag);
// Position i sends its `count` elements to position dest[i] (-1: nowhere);
// a position nobody sends to gets zeros. dest must be injective.
void permute(Transport& t, const Group& g, const void* in, void* out, int64_t count, DType dtype,
             const std::vector<int>& dest, uint64_t tag);
// permute with dest[i] = i + offset (wrapping, or nowhere past the ends).
void shift(Transport& t, const Group& g, const void* in, void* out, int64_t count, DType dtype,
           int offset, bool wrap, uint64_t tag);
// in: this position's block of a split dimension, seen as [outer,
// w.block, inner]; out: its window (w.begin[g.index], w.extent rows) as
// [outer, w.extent, inner], rows from whichever positions hold them (the
// neighbours, for a convolution's halo; farther ones when a window is wider
// than a block), zeros past either end. Each pair of positions exchanges at
// most one message each way.
void halo_exchange(Transport& t, const Group& g, const void* in, void* out, int64_t outer,
                   int64_t inner, DType dtype, const HaloWindows& w, uint64_t tag);
// data of position `root` to everyone (pipelined along the ring).
void broadcast(Transport& t, const Group& g, void* data, int64_t count, DType dtype, int root,
               uint64_t tag);
// Returns once every member has entered it (dissemination barrier).
void barrier(Transport& t, const Group& g, uint64_t tag);

}  // namespace mtf
