#include "placement/placement_executor.h"

#include "core/check.h"
#include "exec/step_runner.h"
#include "kernels/kernels.h"
#include "mtf/collectives.h"

namespace mtf {

using exec::compute;
using exec::rethrow_in_op;
using exec::split_piece;

void run_placement(const Program& program, std::vector<RunState>& states,
                   std::vector<std::vector<HostTensor>>* fetched) {
  const int64_t n = program.mesh.size();
  MTF_CHECK(static_cast<int64_t>(states.size()) == n);
  std::vector<std::vector<HostTensor>> slots(n, std::vector<HostTensor>(program.num_slots));
  for (const Step& s : program.steps) {
    try {
      switch (s.kind) {
        case Step::Kind::kCompute:
          for (int64_t p = 0; p < n; ++p) {
            std::vector<HostTensor> outs = compute(s, p, slots[p], states[p]);
            for (size_t k = 0; k < outs.size(); ++k)
              slots[p][s.output_slots[k]] = std::move(outs[k]);
          }
          break;
        case Step::Kind::kSplit:
          for (int64_t p = 0; p < n; ++p)
            slots[p][s.output_slots[0]] = split_piece(s, p, slots[p][s.input_slots[0]]);
          break;
        case Step::Kind::kAllgather:
        case Step::Kind::kAllreduce: {
          // Each group's result is computed once, from its members' slices in
          // group order, and shared by the members.
          std::vector<HostTensor> result(n);
          for (int64_t p = 0; p < n; ++p) {
            if (result[p].valid()) continue;
            const Group g = Group::along_axes(program.mesh, p, s.mesh_axes);
            HostTensor r;
            if (s.kind == Step::Kind::kAllgather) {
              std::vector<const HostTensor*> parts;
              for (int q : g.ranks) parts.push_back(&slots[q][s.input_slots[0]]);
              r = HostTensor(s.output_layouts[0].slice_shape(), parts[0]->dtype());
              kernels::concat(parts, s.tensor_axis, r);
            } else {
              r = slots[g.ranks[0]][s.input_slots[0]].clone();
              const kernels::ReduceFn fn = s.reduce_op == ReduceOp::kSum ? kernels::ReduceFn::kSum
                                           : s.reduce_op == ReduceOp::kMax
                                               ? kernels::ReduceFn::kMax
                                               : kernels::ReduceFn::kMin;
              for (size_t k = 1; k < g.ranks.size(); ++k)
                kernels::combine(fn, slots[g.ranks[k]][s.input_slots[0]], r);
            }
            for (int q : g.ranks) result[q] = r;
          }
          for (int64_t p = 0; p < n; ++p) slots[p][s.output_slots[0]] = result[p];
          break;
        }
      }
    } catch (const Error& e) {
      rethrow_in_op(*s.op, e);
    }
    for (int slot : s.free_after)
      for (int64_t p = 0; p < n; ++p) slots[p][slot] = HostTensor();
  }
  fetched->assign(n, {});
  for (int64_t p = 0; p < n; ++p)
    for (int slot : program.fetch_slots) (*fetched)[p].push_back(slots[p][slot]);
}

}  // namespace mtf
