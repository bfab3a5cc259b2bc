// Hierarchical allreduce for groups that span machines: the bytes that cross
// the (slow) network between machines are cut to what one rank per machine
// would send, the rest goes over each machine's own (fast) links.
//
// Machines holding k ranks of the group each (the usual case):
//   1. reduce-scatter within the machine: local rank j receives piece j of
//      every local peer's buffer and sums them in local order (direct sends:
//      on shared memory every pair is a link of its own);
//   2. allreduce of piece j between machines, among the j-th ranks of every
//      machine (one rank per machine, so by the flat rules);
//   3. allgather within the machine: local rank j sends its piece to its
//      local peers.
// Machines holding unequal numbers: allreduce within each machine, the
// first rank of each (its leader) allreduces between machines, and
// broadcasts within. Either way every member ends with the same bits.
#include <algorithm>
#include <map>

#include "collectives/allreduce_algorithms.h"
#include "collectives/common.h"

namespace mtf::collectives {
namespace {

// The group's ranks by machine, machines in order of their first rank in
// the group, ranks in group order.
struct MachineSplit {
  std::vector<std::vector<int>> machines;  // transport ranks
  int mine = 0;                            // this rank's machine
  int local_index = 0;                     // its position on it
};

MachineSplit split_by_machine(const Transport& t, const Group& g) {
  const std::vector<int> of = t.machines();
  MachineSplit s;
  std::map<int, int> index;  // machine id -> index in s.machines
  for (int i = 0; i < g.size(); ++i) {
    const int r = g.ranks[static_cast<size_t>(i)];
    const int m = of.empty() ? 0 : of.at(static_cast<size_t>(r));
    auto [it, fresh] = index.emplace(m, static_cast<int>(s.machines.size()));
    if (fresh) s.machines.emplace_back();
    std::vector<int>& ranks = s.machines[static_cast<size_t>(it->second)];
    if (i == g.index) {
      s.mine = it->second;
      s.local_index = static_cast<int>(ranks.size());
    }
    ranks.push_back(r);
  }
  return s;
}

Group group_of(const std::vector<int>& ranks, int index) {
  Group g;
  g.ranks = ranks;
  g.index = index;
  return g;
}

// Step 1: local rank j ends with piece j of the machine's sum (summed in
// local order), the other pieces of `data` untouched.
void reduce_scatter_within(Transport& t, const std::vector<int>& local, int me, char* data,
                           int64_t count, DType dtype, ReduceOp op, uint64_t tag) {
  const int k = static_cast<int>(local.size());
  const size_t es = element_size(dtype);
  const ChunkRange mine = chunk_of(0, count, k, me);
  const int64_t len = mine.end - mine.begin;
  // Nothing to hold on a transport that moves sizes only (the simulator's
  // cost-only mode, where k buffers of every rank would not fit).
  const bool data_moves = t.carries_data();
  std::vector<char> received(data_moves ? static_cast<size_t>(len) * es * static_cast<size_t>(k)
                                        : 0);
  std::vector<SendSpec> sends;
  std::vector<RecvSpec> recvs;
  // Rotated: at its d-th send every rank sends to a different peer (me + d)
  // and receives from the one sending to it (me - d), so no peer is sent
  // to by all at once.
  for (int d = 1; d < k; ++d) {
    const int j = (me + d) % k;
    const ChunkRange c = chunk_of(0, count, k, j);
    sends.push_back({local[static_cast<size_t>(j)], tag, data + c.begin * static_cast<int64_t>(es),
                     static_cast<size_t>(c.end - c.begin) * es});
    const int from = (me - d + k) % k;
    recvs.push_back(
        {local[static_cast<size_t>(from)], tag,
         data_moves ? received.data() + static_cast<size_t>(from) * static_cast<size_t>(len) * es
                    : nullptr,
         static_cast<size_t>(len) * es});
  }
  if (data_moves) {
    std::copy_n(data + mine.begin * static_cast<int64_t>(es), static_cast<size_t>(len) * es,
                received.data() + static_cast<size_t>(me) * static_cast<size_t>(len) * es);
  }
  t.exchange(sends, recvs);
  if (!data_moves || len == 0) return;
  char* out = data + mine.begin * static_cast<int64_t>(es);
  std::copy_n(received.data(), static_cast<size_t>(len) * es, out);
  for (int j = 1; j < k; ++j)
    reduce_into(out, received.data() + static_cast<size_t>(j) * static_cast<size_t>(len) * es, len,
                dtype, op);
}

// Step 3: local rank j sends piece j to every local peer.
void allgather_within(Transport& t, const std::vector<int>& local, int me, char* data,
                      int64_t count, DType dtype, uint64_t tag) {
  const int k = static_cast<int>(local.size());
  const size_t es = element_size(dtype);
  const ChunkRange mine = chunk_of(0, count, k, me);
  std::vector<SendSpec> sends;
  std::vector<RecvSpec> recvs;
  for (int d = 1; d < k; ++d) {  // rotated, as above
    const int to = (me + d) % k, from = (me - d + k) % k;
    const ChunkRange c = chunk_of(0, count, k, from);
    sends.push_back({local[static_cast<size_t>(to)], tag,
                     data + mine.begin * static_cast<int64_t>(es),
                     static_cast<size_t>(mine.end - mine.begin) * es});
    recvs.push_back({local[static_cast<size_t>(from)], tag,
                     data + c.begin * static_cast<int64_t>(es),
                     static_cast<size_t>(c.end - c.begin) * es});
  }
  t.exchange(sends, recvs);
}

}  // namespace

bool spans_machines(const Transport& t, const Group& g) {
  if (g.size() < 3) return false;
  const std::vector<int> of = t.machines();
  if (of.empty()) return false;
  std::map<int, int> count;
  for (int r : g.ranks) ++count[of.at(static_cast<size_t>(r))];
  if (count.size() < 2) return false;
  for (const auto& [machine, n] : count)
    if (n > 1) return true;
  return false;
}

void allreduce_hierarchical(Transport& t, const Group& g, void* data, int64_t count, DType dtype,
                            ReduceOp op, uint64_t tag) {
  if (g.size() == 1 || count == 0) return;
  const MachineSplit s = split_by_machine(t, g);
  const std::vector<int>& local = s.machines[static_cast<size_t>(s.mine)];
  const int k = static_cast<int>(local.size());
  const int machines = static_cast<int>(s.machines.size());
  if (machines == 1) {
    allreduce(t, g, data, count, dtype, op, tag, AllreduceAlgorithm::kAuto);
    return;
  }
  char* p = static_cast<char*>(data);
  const size_t es = element_size(dtype);
  bool even = true;
  for (const auto& m : s.machines) even = even && static_cast<int>(m.size()) == k;
  if (even && count >= k) {
    // Between machines: the j-th rank of each, in machine order.
    std::vector<int> peers;
    for (const auto& m : s.machines) peers.push_back(m[static_cast<size_t>(s.local_index)]);
    const ChunkRange piece = chunk_of(0, count, k, s.local_index);
    if (k > 1)
      reduce_scatter_within(t, local, s.local_index, p, count, dtype, op,
                            subtag(tag, Channel::kWithinMachineScatter));
    allreduce(t, group_of(peers, s.mine), p + piece.begin * static_cast<int64_t>(es),
              piece.end - piece.begin, dtype, op, subtag(tag, Channel::kBetweenMachines),
              AllreduceAlgorithm::kAuto);
    if (k > 1)
      allgather_within(t, local, s.local_index, p, count, dtype,
                       subtag(tag, Channel::kWithinMachineGather));
    return;
  }
  // Unequal machines (or fewer elements than ranks per machine): through
  // one leader per machine.
  if (k > 1) {
    allreduce(t, group_of(local, s.local_index), p, count, dtype, op,
              subtag(tag, Channel::kWithinMachineAllreduce), AllreduceAlgorithm::kAuto);
  }
  if (s.local_index == 0) {
    std::vector<int> leaders;
    for (const auto& m : s.machines) leaders.push_back(m[0]);
    allreduce(t, group_of(leaders, s.mine), p, count, dtype, op,
              subtag(tag, Channel::kBetweenLeaders), AllreduceAlgorithm::kAuto);
  }
  if (k > 1)
    broadcast(t, group_of(local, s.local_index), p, count, dtype, 0,
              subtag(tag, Channel::kWithinMachineBroadcast));
}

}  // namespace mtf::collectives
