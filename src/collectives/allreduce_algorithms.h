// allreduce_algorithms.h — the allreduce algorithms besides the ring
// (allreduce_recursive_doubling.cc) and the one rule that picks among them,
// which allreduce() and every cost estimate share. Internal.
#pragma once

#include <cstdint>

#include "mtf/collectives.h"

namespace mtf::collectives {

// Buffers of at most this many bytes go by recursive doubling.
// (Measured across processes on loopback: it wins up to about 64 KiB.)
constexpr int64_t kSmallAllreduceBytes = 64 * 1024;
// Above kSmallAllreduceBytes and up to this, on more than two ranks of a
// flat network, by halving-doubling.
constexpr int64_t kMidAllreduceBytes = 1024 * 1024;

// The algorithm allreduce() runs for `bytes` over `group_size` ranks, on a
// transport whose flat_network() is `flat` (kAuto never comes back).
AllreduceAlgorithm choose_allreduce_algorithm(int64_t bytes, int group_size, bool flat);

// Allreduce by recursive doubling: log2(p) exchanges of the whole buffer.
void allreduce_recursive_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                  DType dtype, ReduceOp op, uint64_t tag);
// Allreduce by recursive halving then doubling (Rabenseifner).
void allreduce_halving_doubling(Transport& t, const Group& g, void* data, int64_t count,
                                DType dtype, ReduceOp op, uint64_t tag);
// Whether g has ranks on two or more machines of t.machines(), and two or
// more on at least one: then kAuto allreduces go hierarchical.
bool spans_machines(const Transport& t, const Group& g);
// Allreduce within each machine, then between machines, then within
// (allreduce_hierarchical.cc); a group on one machine goes by kAuto.
void allreduce_hierarchical(Transport& t, const Group& g, void* data, int64_t count, DType dtype,
                            ReduceOp op, uint64_t tag);
// Bidirectional ring allreduce: reduce-scatter then allgather, half of the
// buffer each way round the ring (allreduce.cc).
void allreduce_ring(Transport& t, const Group& g, void* data, int64_t count, DType dtype,
                    ReduceOp op, uint64_t tag);

}  // namespace mtf::collectives
