#include "placement/placement_executor.h"

#include "core/check.h"
#include "exec/step_dispatch.h"
#include "exec/step_runner.h"
#include "kernels/kernels.h"
#include "mtf/collectives.h"

namespace mtf {

using exec::rethrow_in_op;
using exec::split_piece;

namespace {

// Every device's step at once: kernels per device, and collectives in
// memory, each group's result computed once from its members' slices in
// group order and shared by the members.
class PlacementBackend : public exec::StepBackend {
 public:
  PlacementBackend(const Program& program, std::vector<RunState>& states,
                   std::vector<std::vector<HostTensor>>& slots)
      : program_(program), states_(states), slots_(slots), n_(program.mesh.size()) {}

  void compute(const Step& s) override {
    for (int64_t p = 0; p < n_; ++p) {
      std::vector<HostTensor> outs = exec::compute(s, p, slots_[p], states_[p]);
      for (size_t k = 0; k < outs.size(); ++k) slots_[p][s.output_slots[k]] = std::move(outs[k]);
    }
  }
  void split(const Step& s) override {
    for (int64_t p = 0; p < n_; ++p)
      slots_[p][s.output_slots[0]] = split_piece(s, p, slots_[p][s.input_slots[0]]);
  }
  void pass_through(const Step& s) override {
    for (int64_t p = 0; p < n_; ++p) slots_[p][s.output_slots[0]] = slots_[p][s.input_slots[0]];
  }
  void allgather(const Step& s, int64_t) override {
    per_group(s, [&](const Group& g) {
      std::vector<const HostTensor*> parts;
      for (int q : g.ranks) parts.push_back(&slots_[q][s.input_slots[0]]);
      HostTensor r(s.output_layouts[0].slice_shape(), parts[0]->dtype());
      kernels::concat(parts, s.collective.tensor_axis, r);
      return r;
    });
  }
  void alltoall(const Step& s, int64_t n) override {
    std::vector<HostTensor> out(n_);
    for (int64_t p = 0; p < n_; ++p) {
      const Group g = Group::along_axes(program_.mesh, p, s.collective.mesh_axes);
      // Position g.index's block of the split axis, from every member.
      std::vector<HostTensor> blocks;
      for (int q : g.ranks) {
        const HostTensor& x = slots_[q][s.input_slots[0]];
        const int64_t b = x.shape()[s.collective.tensor_axis].size / n;
        HostTensor part(x.shape().resize(x.shape()[s.collective.tensor_axis].name, b), x.dtype());
        kernels::slice(x, s.collective.tensor_axis, g.index * b, part);
        blocks.push_back(std::move(part));
      }
      std::vector<const HostTensor*> parts;
      for (const HostTensor& b : blocks) parts.push_back(&b);
      out[p] = HostTensor(s.output_layouts[0].slice_shape(), blocks[0].dtype());
      kernels::concat(parts, s.collective.gather_axis, out[p]);
    }
    for (int64_t p = 0; p < n_; ++p) slots_[p][s.output_slots[0]] = std::move(out[p]);
  }
  void halo(const Step& s) override {
    std::vector<HostTensor> windows(n_);
    for (int64_t p = 0; p < n_; ++p) {
      const Group g = Group::along_axes(program_.mesh, p, s.collective.mesh_axes);
      windows[p] = exec::halo_window(s, p, program_.mesh, [&](int position) -> const HostTensor& {
        return slots_[g.ranks[position]][s.input_slots[0]];
      });
    }
    for (int64_t p = 0; p < n_; ++p) slots_[p][s.output_slots[0]] = std::move(windows[p]);
  }
  void allreduce(const Step& s, int64_t) override {
    const kernels::ReduceFn fn = s.collective.reduce_op == ReduceOp::kSum ? kernels::ReduceFn::kSum
                                 : s.collective.reduce_op == ReduceOp::kMax
                                     ? kernels::ReduceFn::kMax
                                     : kernels::ReduceFn::kMin;
    per_group(s, [&](const Group& g) {
      HostTensor r = slots_[g.ranks[0]][s.input_slots[0]].clone();
      for (size_t k = 1; k < g.ranks.size(); ++k)
        kernels::combine(fn, slots_[g.ranks[k]][s.input_slots[0]], r);
      return r;
    });
  }

 private:
  // Output slot of every device <- combine(its group), once per group.
  template <typename Combine>
  void per_group(const Step& s, Combine combine) {
    std::vector<HostTensor> result(n_);
    for (int64_t p = 0; p < n_; ++p) {
      if (result[p].valid()) continue;
      const Group g = Group::along_axes(program_.mesh, p, s.collective.mesh_axes);
      const HostTensor r = combine(g);
      for (int q : g.ranks) result[q] = r;
    }
    for (int64_t p = 0; p < n_; ++p) slots_[p][s.output_slots[0]] = result[p];
  }

  const Program& program_;
  std::vector<RunState>& states_;
  std::vector<std::vector<HostTensor>>& slots_;
  const int64_t n_;
};

}  // namespace

void run_placement(const Program& program, std::vector<RunState>& states,
                   std::vector<std::vector<HostTensor>>* fetched, StepHooks* hooks) {
  const int64_t n = program.mesh.size();
  MTF_CHECK(static_cast<int64_t>(states.size()) == n);
  std::vector<std::vector<HostTensor>> slots(n, std::vector<HostTensor>(program.num_slots));
  PlacementBackend backend(program, states, slots);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (hooks) hooks->before_step(s, i);
    try {
      exec::dispatch_step(program.mesh, s, backend);
    } catch (const Error& e) {
      rethrow_in_op(*s.op, e);
    }
    if (hooks) hooks->after_step(s, i);
    for (int slot : s.free_after)
      for (int64_t p = 0; p < n; ++p) slots[p][slot] = HostTensor();
  }
  fetched->assign(n, {});
  for (int64_t p = 0; p < n; ++p)
    for (int slot : program.fetch_slots) (*fetched)[p].push_back(slots[p][slot]);
}

}  // namespace mtf
