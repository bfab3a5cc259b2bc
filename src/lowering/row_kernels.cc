#include "lowering/row_kernels.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_util.h"

namespace mtf {
namespace {

// Where one composition's steps are, the slots of its inputs (the row op's
// inputs, in order) and of its results (the row op's outputs, in order).
struct Match {
  std::vector<int> members;  // its steps, in program order
  std::vector<int> input_slots, result_slots;
};

class RowsMatcher {
 public:
  explicit RowsMatcher(const Program& p) : p_(p), readers_(p.num_slots), writers_(p.num_slots) {
    for (int i = 0; i < static_cast<int>(p.steps.size()); ++i) {
      steps_of_[p.steps[i].op].push_back(i);
      for (int slot : p.steps[i].input_slots) readers_[slot].push_back(i);
      for (int slot : p.steps[i].output_slots) writers_[slot].push_back(i);
    }
    fetched_.insert(p.fetch_slots.begin(), p.fetch_slots.end());
  }

  // The steps of `c` when they can run as `row_op`'s kernel (row_kernels.h).
  bool match(const Operation& row_op, const ops::RowKernel& c, Match* m) const {
    for (const Operation* op : c.composition) {
      auto it = steps_of_.find(op);
      if (it == steps_of_.end() || it->second.size() != 1) return false;
      const Step& s = p_.steps[it->second[0]];
      if (s.kind != Step::Kind::kCompute || s.fusion.expr || !s.windows.empty() ||
          s.output_slots.size() != 1)
        return false;
      m->members.push_back(it->second[0]);
    }
    std::sort(m->members.begin(), m->members.end());
    const int last = m->members.back();
    for (const Operation* op : c.results) m->result_slots.push_back(slot_made_by(op));
    return inputs_found(row_op, m) && reads_ok(*m, last) && rows_whole(*m);
  }

 private:
  int slot_made_by(const Operation* op) const {
    return p_.steps[steps_of_.at(op)[0]].output_slots[0];
  }
  bool is_member(const Match& m, int step) const {
    return std::binary_search(m.members.begin(), m.members.end(), step);
  }

  // Each input of the row op: the slot the members read it from, written
  // before the first of them; and the members read nothing else from outside.
  bool inputs_found(const Operation& row_op, Match* m) const {
    std::set<int> produced, external;
    for (int i : m->members) produced.insert(p_.steps[i].output_slots[0]);
    for (int i : m->members)
      for (int slot : p_.steps[i].input_slots)
        if (!produced.count(slot)) external.insert(slot);
    for (const Tensor& in : row_op.inputs()) {
      int slot = -1;
      for (int i : m->members) {
        const Step& s = p_.steps[i];
        for (size_t k = 0; k < s.input_slots.size(); ++k) {
          if (s.op->inputs()[k].id() != in.id()) continue;
          if (slot >= 0 && slot != s.input_slots[k]) return false;
          slot = s.input_slots[k];
        }
      }
      if (slot < 0) return false;
      for (int w : writers_[slot])
        if (w > m->members.front()) return false;  // written while the composition runs
      m->input_slots.push_back(slot);
    }
    return std::set<int>(m->input_slots.begin(), m->input_slots.end()) == external;
  }

  // The members' values are read by members only, but for the results, whose
  // other readers come after the last member (where the kernel will run).
  bool reads_ok(const Match& m, int last) const {
    for (int i : m.members) {
      const int slot = p_.steps[i].output_slots[0];
      const bool result =
          std::find(m.result_slots.begin(), m.result_slots.end(), slot) != m.result_slots.end();
      if (!result && fetched_.count(slot)) return false;
      for (int r : readers_[slot])
        if (!is_member(m, r) && (!result || r < last)) return false;
    }
    return true;
  }

  // The kernel's rows: the first input's slice holds whole rows (its
  // innermost dimension unsplit); every slot is bfloat16 and of that slice's
  // shape, or of it less the innermost dimension (a value per row).
  bool rows_whole(const Match& m) const {
    const TensorLayout& first = p_.slot_layouts[m.input_slots[0]];
    const Shape rows = first.slice_shape();
    if (rows.ndims() == 0 || rows[rows.ndims() - 1].size != first.shape()[rows.ndims() - 1].size)
      return false;
    const Shape per_row = rows.minus(Shape({rows[rows.ndims() - 1]}));
    std::vector<int> slots = m.input_slots;
    slots.insert(slots.end(), m.result_slots.begin(), m.result_slots.end());
    for (int slot : slots) {
      const Shape s = p_.slot_layouts[slot].slice_shape();
      if (p_.slot_dtypes[slot] != bfloat16 || !(s == rows || s == per_row)) return false;
    }
    return true;
  }

  const Program& p_;
  std::map<const Operation*, std::vector<int>> steps_of_;
  std::vector<std::vector<int>> readers_, writers_;
  std::set<int> fetched_;
};

}  // namespace

int fuse_row_kernels(Program& p) {
  const Graph* graph = nullptr;
  for (const Step& s : p.steps)
    if (s.op) graph = &s.op->graph();
  if (!graph) return 0;
  std::vector<const Operation*> row_ops;
  ops::RowKernel info;
  for (const auto& owned : graph->operations())
    if (ops::as_row_kernel(*owned, &info)) row_ops.push_back(owned.get());
  if (row_ops.empty()) return 0;
  const RowsMatcher matcher(p);
  std::vector<bool> removed(p.steps.size(), false);
  int fused = 0;
  for (const Operation* op : row_ops) {
    ops::as_row_kernel(*op, &info);
    Match m;
    if (!matcher.match(*op, info, &m)) continue;
    double flops = 0;
    for (int i : m.members) {
      flops += p.steps[i].flops;
      if (i != m.members.back()) removed[i] = true;
    }
    Step& s = p.steps[m.members.back()];
    s.op = op;
    s.input_slots = m.input_slots;
    s.input_layouts.clear();
    for (int slot : m.input_slots) s.input_layouts.push_back(p.slot_layouts[slot]);
    s.output_slots = m.result_slots;
    s.output_layouts.clear();
    for (int slot : m.result_slots) s.output_layouts.push_back(p.slot_layouts[slot]);
    s.kernel_plan = nullptr;
    s.collective = StepCollective{};
    s.flops = flops;
    ++fused;
  }
  if (!fused) return 0;
  std::vector<Step> kept;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(p.steps[i]));
  p.steps = std::move(kept);
  assign_lifetimes(p);
  return fused;
}

}  // namespace mtf
