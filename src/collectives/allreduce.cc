// Ring allreduce: reduce-scatter then allgather, with the first half of the
// buffer going round the ring one way and the second half the other way, in
// lockstep, so each link carries traffic in both directions. Buffers of at
// most 64 KiB go by recursive doubling instead (fewer, larger steps), and on
// a flat network (every pair of ranks equally near) buffers of up to 1 MiB
// on more than two ranks by halving-doubling (the ring's traffic in
// 2 log2(p) steps instead of 2(p-1)).
#include <algorithm>

#include "collectives/allreduce_algorithms.h"
#include "collectives/ring_pass.h"

namespace mtf {

using collectives::RingPass;
using collectives::RingPassSpec;

namespace collectives {

AllreduceAlgorithm choose_allreduce_algorithm(int64_t bytes, int group_size, bool flat) {
  if (bytes <= kSmallAllreduceBytes) return AllreduceAlgorithm::kRecursiveDoubling;
  if (group_size > 2 && flat && bytes <= kMidAllreduceBytes)
    return AllreduceAlgorithm::kHalvingDoubling;
  return AllreduceAlgorithm::kRing;
}

void allreduce_ring(Transport& t, const Group& g, void* data, int64_t count, DType dtype,
                    ReduceOp op, uint64_t tag) {
  const int n = g.size();
  std::vector<int> reversed(g.ranks.rbegin(), g.ranks.rend());
  const int rpos = n - 1 - g.index;
  const int64_t half = count / 2;
  char* p = static_cast<char*>(data);
  auto passes = [&](RingPass::Kind kind, Channel forward, Channel backward) {
    std::vector<RingPass> v;
    v.emplace_back(t, RingPassSpec{kind, g.ranks, g.index, p, half, count, dtype, op, 1,
                                   subtag(tag, forward)});
    if (half > 0) {
      v.emplace_back(
          t, RingPassSpec{kind, reversed, rpos, p, 0, half, dtype, op, 1, subtag(tag, backward)});
    }
    return v;
  };
  auto scatter = passes(RingPass::Kind::kReduceScatter, Channel::kRingScatterForward,
                        Channel::kRingScatterBackward);
  run_lockstep(scatter);
  auto gather =
      passes(RingPass::Kind::kAllgather, Channel::kRingGatherForward, Channel::kRingGatherBackward);
  run_lockstep(gather);
}

}  // namespace collectives

void allreduce(Transport& t, const Group& g, void* data, int64_t count, DType dtype, ReduceOp op,
               uint64_t tag, AllreduceAlgorithm algorithm) {
  using namespace collectives;
  check_group(t, g, "allreduce");
  const int64_t bytes = count * static_cast<int64_t>(element_size(dtype));
  if (g.size() == 1 || count == 0) return;
  if (algorithm == AllreduceAlgorithm::kAuto && spans_machines(t, g))
    algorithm = AllreduceAlgorithm::kHierarchical;
  if (algorithm == AllreduceAlgorithm::kAuto)
    algorithm = choose_allreduce_algorithm(bytes, g.size(), t.flat_network());
  switch (algorithm) {
    case AllreduceAlgorithm::kHierarchical:
      allreduce_hierarchical(t, g, data, count, dtype, op, tag);
      return;
    case AllreduceAlgorithm::kRecursiveDoubling:
      allreduce_recursive_doubling(t, g, data, count, dtype, op, tag);
      return;
    case AllreduceAlgorithm::kHalvingDoubling:
      allreduce_halving_doubling(t, g, data, count, dtype, op, tag);
      return;
    case AllreduceAlgorithm::kAuto:
    case AllreduceAlgorithm::kRing:
      allreduce_ring(t, g, data, count, dtype, op, tag);
      return;
  }
}

void allreduce_over_axes(Transport& t, const MeshShape& mesh, int64_t pnum,
                         const std::vector<int>& axes, void* data, int64_t count, DType dtype,
                         ReduceOp op, uint64_t tag) {
  // Axes of one processor need no allreduce; the others are numbered in
  // order, each with its own tag.
  int axis_index = 0;
  for (int axis : axes) {
    const Group group = Group::along_axes(mesh, pnum, {axis});
    if (group.size() == 1) continue;
    allreduce(t, group, data, count, dtype, op, collectives::axis_tag(tag, axis_index++));
  }
}

}  // namespace mtf
