#include "lowering/row_kernels.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_util.h"

namespace mtf {
namespace {

// Where one composition's steps are, and the slots of its inputs (the row
// op's inputs, in order).
struct Match {
  std::vector<int> members;  // its steps, in program order (the result's last)
  std::vector<int> input_slots;
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
  bool match(const Operation& row_op, const ops::SoftmaxRows& c, Match* m) const {
    for (const Operation* op : c.composition) {
      auto it = steps_of_.find(op);
      if (it == steps_of_.end() || it->second.size() != 1) return false;
      const Step& s = p_.steps[it->second[0]];
      if (s.kind != Step::Kind::kCompute || s.fusion.expr || !s.windows.empty()) return false;
      m->members.push_back(it->second[0]);
    }
    std::sort(m->members.begin(), m->members.end());
    const int result = m->members.back();
    if (p_.steps[result].op != c.result || p_.steps[result].output_slots.size() != 1) return false;
    std::set<int> produced, external;
    for (int i : m->members)
      for (int slot : p_.steps[i].output_slots) produced.insert(slot);
    for (int i : m->members)
      for (int slot : p_.steps[i].input_slots)
        if (!produced.count(slot)) external.insert(slot);
    // Each input of the row op: the slot the members read it from.
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
    if (std::set<int>(m->input_slots.begin(), m->input_slots.end()) != external) return false;
    for (int i : m->members) {
      if (i == result) continue;
      for (int slot : p_.steps[i].output_slots) {
        if (fetched_.count(slot)) return false;
        for (int r : readers_[slot])
          if (!std::binary_search(m->members.begin(), m->members.end(), r)) return false;
      }
    }
    // The kernel's rows: every input's slice is the result's, all bfloat16.
    const int out = p_.steps[result].output_slots[0];
    for (int slot : m->input_slots)
      if (!(p_.slot_layouts[slot].slice_shape() == p_.slot_layouts[out].slice_shape()) ||
          p_.slot_dtypes[slot] != bfloat16)
        return false;
    return p_.slot_dtypes[out] == bfloat16;
  }

 private:
  const Program& p_;
  std::map<const Operation*, std::vector<int>> steps_of_;
  std::vector<std::vector<int>> readers_, writers_;
  std::set<int> fetched_;
};

}  // namespace

int fuse_softmax_rows(Program& p) {
  const Graph* graph = nullptr;
  for (const Step& s : p.steps)
    if (s.op) graph = &s.op->graph();
  if (!graph) return 0;
  std::vector<const Operation*> row_ops;
  ops::SoftmaxRows info;
  for (const auto& owned : graph->operations())
    if (ops::as_softmax_rows(*owned, &info)) row_ops.push_back(owned.get());
  if (row_ops.empty()) return 0;
  const RowsMatcher matcher(p);
  std::vector<bool> removed(p.steps.size(), false);
  int fused = 0;
  for (const Operation* op : row_ops) {
    ops::as_softmax_rows(*op, &info);
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
