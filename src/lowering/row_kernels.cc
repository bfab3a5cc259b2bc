#include "lowering/row_kernels.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/op_util.h"

namespace mtf {
namespace {

// Where one composition's steps are, and the slot they read from outside.
struct Match {
  std::vector<int> members;  // its steps, in program order (the result's last)
  int input_slot = -1;
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

  // The steps of `c` when they can run as one row kernel (row_kernels.h).
  bool match(const ops::SoftmaxRows& c, Match* m) const {
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
    if (external.size() != 1) return false;
    m->input_slot = *external.begin();
    if (writers_[m->input_slot].size() != 1 || writers_[m->input_slot][0] > m->members.front())
      return false;
    for (int i : m->members) {
      if (i == result) continue;
      for (int slot : p_.steps[i].output_slots) {
        if (fetched_.count(slot)) return false;
        for (int r : readers_[slot])
          if (!std::binary_search(m->members.begin(), m->members.end(), r)) return false;
      }
    }
    // The kernel's rows: the input's slice is the result's, bfloat16 both.
    const int out = p_.steps[result].output_slots[0];
    return p_.slot_layouts[m->input_slot].slice_shape() == p_.slot_layouts[out].slice_shape() &&
           p_.slot_dtypes[m->input_slot] == bfloat16 && p_.slot_dtypes[out] == bfloat16;
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
    if (!matcher.match(info, &m)) continue;
    double flops = 0;
    for (int i : m.members) {
      flops += p.steps[i].flops;
      if (i != m.members.back()) removed[i] = true;
    }
    Step& s = p.steps[m.members.back()];
    s.op = op;
    s.input_slots = {m.input_slot};
    s.input_layouts = {p.slot_layouts[m.input_slot]};
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
