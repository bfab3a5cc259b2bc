#include "lowering/fusion.h"

#include <algorithm>
#include <set>

#include "ops/op_util.h"

namespace mtf {
namespace {

using kernels::FusedExpr;
using kernels::FusedInstr;

// Which steps read and which write each slot, in program order.
struct SlotUses {
  std::vector<std::vector<int>> readers, writers;
  explicit SlotUses(const Program& p) : readers(p.num_slots), writers(p.num_slots) {
    for (int i = 0; i < static_cast<int>(p.steps.size()); ++i) {
      for (int slot : p.steps[i].input_slots) readers[slot].push_back(i);
      for (int slot : p.steps[i].output_slots) writers[slot].push_back(i);
    }
  }
  // The first step writing `slot`, or -1.
  int producer(int slot) const { return writers[slot].empty() ? -1 : writers[slot][0]; }
};

// What the pass knows of the program before it changes anything.
class FusionPlanner {
 public:
  explicit FusionPlanner(const Program& p)
      : p_(p),
        n_(static_cast<int>(p.steps.size())),
        uses_(p),
        fetched_(p.fetch_slots.begin(), p.fetch_slots.end()),
        instr_(n_),
        eligible_(n_, false),
        reduces_(n_, false),
        reduce_fn_(n_, kernels::ReduceFn::kSum),
        fuse_alone_(n_, false),
        group_of_(n_, -1),
        blas_(runs_float32_blas(p)) {
    for (int i = 0; i < n_; ++i) {
      const Step& s = p.steps[i];
      if (s.kind != Step::Kind::kCompute || s.fusion.expr || s.output_slots.size() != 1 ||
          !all_float(s.input_slots))
        continue;
      eligible_[i] = ops::as_fused_instr(*s.op, &instr_[i]);
      reduces_[i] = s.input_slots.size() == 1 && p.slot_dtypes[s.input_slots[0]] == float32 &&
                    p.slot_dtypes[s.output_slots[0]] == float32 &&
                    ops::as_reduction(*s.op, &reduce_fn_[i]);
      // A lone op on bfloat16 runs fused too: the fused kernel widens a
      // block at a time where its own kernel widens whole tensors. So does a
      // float32 one where kernels may use threads (Step::threaded): the
      // fused kernel splits its space over them, the op's own does not.
      fuse_alone_[i] = eligible_[i] && (touches_bfloat16(s) || !blas_);
    }
  }

  // Groups every eligible step with the groups of the eligible steps whose
  // outputs it reads, where that stays legal.
  void plan() {
    for (int i = 0; i < n_; ++i) {
      if (reduces_[i]) attach_reduction(i);
      if (!eligible_[i]) continue;
      const int g = static_cast<int>(groups_.size());
      groups_.push_back({i});
      closed_.push_back(false);
      group_of_[i] = g;
      const Step& s = p_.steps[i];
      for (int slot : s.input_slots) {
        const int j = uses_.producer(slot);
        if (j < 0 || !eligible_[j] || group_of_[j] == g || uses_.writers[slot].size() != 1)
          continue;
        if (!(slice_shape(p_.steps[j].output_slots[0]) == slice_shape(s.output_slots[0]))) continue;
        const int h = group_of_[j];
        if (closed_[h]) continue;  // ends in a reduction
        std::vector<int> merged = groups_[g];
        merged.insert(merged.end(), groups_[h].begin(), groups_[h].end());
        std::sort(merged.begin(), merged.end());
        if (!legal(merged, groups_[h], i)) continue;
        for (int m : groups_[h]) group_of_[m] = g;
        groups_[g] = std::move(merged);
        groups_[h].clear();
      }
    }
  }

  // Reduction step i ends the group that produces its input, as the fused
  // step's epilogue, when the reduction keeps the input's first axis (the
  // kernel cuts its pieces along it) and moving the group to i is legal.
  void attach_reduction(int i) {
    const Step& s = p_.steps[i];
    const int x = s.input_slots[0];
    const int j = uses_.producer(x);
    if (j < 0 || j > i || !eligible_[j] || uses_.writers[x].size() != 1) return;
    const int g = group_of_[j];
    if (closed_[g]) return;
    const Shape space = slice_shape(x);
    if (space.ndims() == 0 || slice_shape(s.output_slots[0]).index_of(space[0].name) < 0) return;
    std::vector<int> merged = groups_[g];
    merged.push_back(i);  // after every member
    if (!legal(merged, groups_[g], i)) return;
    groups_[g] = std::move(merged);
    group_of_[i] = g;
    closed_[g] = true;
  }

  // The program with each group as one fused step at its last member.
  Program rewrite(FusionStats* stats) const {
    Program out = p_;
    out.steps.clear();
    for (int i = 0; i < n_; ++i) {
      const int g = group_of_[i];
      if (g < 0 || (groups_[g].size() == 1 && !fuse_alone_[i])) {  // its own kernel
        out.steps.push_back(p_.steps[i]);
        continue;
      }
      const std::vector<int>& members = groups_[g];
      if (members.back() != i) continue;
      out.steps.push_back(fused_step(members));
      stats->fused_steps += 1;
      stats->removed_steps += static_cast<int>(members.size()) - 1;
    }
    return out;
  }

 private:
  bool all_float(const std::vector<int>& slots) const {
    for (int slot : slots)
      if (p_.slot_dtypes[slot] != float32 && p_.slot_dtypes[slot] != bfloat16) return false;
    return true;
  }
  bool touches_bfloat16(const Step& s) const {
    for (int slot : s.input_slots)
      if (p_.slot_dtypes[slot] == bfloat16) return true;
    return p_.slot_dtypes[s.output_slots[0]] == bfloat16;
  }
  Shape slice_shape(int slot) const { return p_.slot_layouts[slot].slice_shape(); }
  static bool contains(const std::vector<int>& sorted, int x) {
    return std::binary_search(sorted.begin(), sorted.end(), x);
  }
  // True when a member's output is read after the group's step (or fetched).
  bool read_outside(int member, const std::vector<int>& group) const {
    const int slot = p_.steps[member].output_slots[0];
    if (fetched_.count(slot)) return true;
    for (int r : uses_.readers[slot])
      if (!contains(group, r)) return true;
    return false;
  }

  // Moving the members of `moved` to position `at` (as part of `group`)
  // keeps the program's meaning, and the fused step has few enough operands.
  bool legal(const std::vector<int>& group, const std::vector<int>& moved, int at) const {
    for (int m : moved) {
      for (int r : uses_.readers[p_.steps[m].output_slots[0]])
        if (r < at && !contains(group, r)) return false;  // read before the fused step
      for (int slot : p_.steps[m].input_slots)
        for (int w : uses_.writers[slot])
          if (w > m && w < at) return false;  // input rewritten in place meanwhile
    }
    std::set<int> produced, external;
    for (int m : group) produced.insert(p_.steps[m].output_slots[0]);
    int outputs = 0;
    for (int m : group) {
      for (int slot : p_.steps[m].input_slots)
        if (!produced.count(slot)) external.insert(slot);
      if (m == group.back() || read_outside(m, group)) ++outputs;
    }
    return outputs + static_cast<int>(external.size()) <= kernels::kMaxFusedOperands;
  }

  Step fused_step(const std::vector<int>& members) const {
    Step f;
    f.kind = Step::Kind::kCompute;
    f.op = p_.steps[members.back()].op;
    auto expr = std::make_shared<FusedExpr>();
    std::map<int, int> value_of;  // slot -> instruction
    for (int m : members) {
      const Step& s = p_.steps[m];
      if (reduces_[m]) {  // the epilogue, last
        expr->reduce_of = value_of.at(s.input_slots[0]);
        expr->reduce_fn = reduce_fn_[m];
        expr->reduce_space = slice_shape(s.input_slots[0]);
        f.flops += s.flops;
        f.fusion.ops.push_back(s.op);
        f.output_slots.push_back(s.output_slots[0]);
        f.output_layouts.push_back(s.output_layouts[0]);
        f.fusion.output_dtypes.push_back(p_.slot_dtypes[s.output_slots[0]]);
        continue;
      }
      for (size_t k = 0; k < s.input_slots.size(); ++k) {
        const int slot = s.input_slots[k];
        if (value_of.count(slot)) continue;
        FusedInstr load;
        load.kind = FusedInstr::Kind::kInput;
        load.input = expr->num_inputs++;
        value_of[slot] = static_cast<int>(expr->instrs.size());
        expr->instrs.push_back(load);
        f.input_slots.push_back(slot);
        f.input_layouts.push_back(s.input_layouts[k]);
      }
      FusedInstr in = instr_[m];
      in.a = value_of.at(s.input_slots[0]);
      if (in.kind == FusedInstr::Kind::kBinary) in.b = value_of.at(s.input_slots[1]);
      const int index = static_cast<int>(expr->instrs.size());
      expr->instrs.push_back(in);
      value_of[s.output_slots[0]] = index;
      f.flops += s.flops;
      f.fusion.ops.push_back(s.op);
      if (m == members.back() || read_outside(m, members)) {
        f.output_slots.push_back(s.output_slots[0]);
        f.output_layouts.push_back(s.output_layouts[0]);
        f.fusion.output_dtypes.push_back(p_.slot_dtypes[s.output_slots[0]]);
        expr->outputs.push_back(index);
      }
    }
    f.fusion.expr = std::move(expr);
    return f;
  }

  const Program& p_;
  const int n_;
  SlotUses uses_;
  std::set<int> fetched_;
  std::vector<FusedInstr> instr_;
  std::vector<bool> eligible_;
  std::vector<bool> reduces_;  // a float32 reduction (a possible epilogue)
  std::vector<kernels::ReduceFn> reduce_fn_;
  std::vector<bool> fuse_alone_;  // fused even when alone
  std::vector<int> group_of_;
  const bool blas_;                       // the program runs float32 contractions on OpenBLAS
  std::vector<std::vector<int>> groups_;  // members in program order
  std::vector<bool> closed_;              // per group: ends in a reduction
};

// Each output of a fused step takes over an input of its exact slice shape
// whose last reader is the step (each input once).
void assign_donors(Program& p) {
  for (Step& s : p.steps) {
    if (!s.fusion.expr) continue;
    s.fusion.donors.assign(s.output_slots.size(), -1);
    std::set<int> used;
    // A reduction epilogue's output (the last) is written piece by piece
    // while inputs are still read: it takes over nothing.
    const size_t elementwise = s.output_slots.size() - (s.fusion.expr->reduce_of >= 0 ? 1 : 0);
    for (size_t k = 0; k < elementwise; ++k) {
      const Shape shape = s.output_layouts[k].slice_shape();
      for (size_t d = 0; d < s.input_slots.size(); ++d) {
        const int slot = s.input_slots[d];
        const bool dies =
            std::find(s.free_after.begin(), s.free_after.end(), slot) != s.free_after.end();
        if (!dies || used.count(slot) || p.slot_dtypes[slot] != s.fusion.output_dtypes[k] ||
            !(p.slot_layouts[slot].slice_shape() == shape))
          continue;
        s.fusion.donors[k] = static_cast<int>(d);
        used.insert(slot);
        break;
      }
    }
  }
}

}  // namespace

int fuse_updates(Program& p) {
  const int n = static_cast<int>(p.steps.size());
  const SlotUses uses(p);
  const auto& readers = uses.readers;
  const auto& writers = uses.writers;
  const std::set<int> fetched(p.fetch_slots.begin(), p.fetch_slots.end());
  std::vector<bool> removed(n, false);
  int fused = 0;
  for (int i = 0; i < n; ++i) {
    Step& a = p.steps[i];
    float alpha = 0;
    if (a.kind != Step::Kind::kCompute || a.fusion.expr || a.update.einsum ||
        !ops::as_scaled_update(*a.op, &alpha) || a.input_slots.size() != 2)
      continue;
    const int value = a.input_slots[1];
    if (writers[value].size() != 1 || readers[value].size() != 1 || fetched.count(value)) continue;
    const int e = writers[value][0];
    const Step& es = p.steps[e];
    if (es.kind != Step::Kind::kCompute || es.fusion.expr || !ops::is_einsum(*es.op) ||
        es.output_slots.size() != 1)
      continue;
    if (!(p.slot_layouts[value].slice_shape() == p.slot_layouts[a.input_slots[0]].slice_shape()))
      continue;
    // The fused update kernel is float32 (a bfloat16 variable or operand
    // keeps its two steps).
    bool all_float32 = p.slot_dtypes[a.input_slots[0]] == float32;
    for (int slot : es.input_slots) all_float32 = all_float32 && p.slot_dtypes[slot] == float32;
    if (!all_float32) continue;
    // The einsum moves to the assignment: its inputs must not change between.
    bool moved_safely = true;
    for (int slot : es.input_slots)
      for (int w : writers[slot])
        if (w > e && w < i) moved_safely = false;
    if (!moved_safely) continue;
    a.update.einsum = es.op;
    a.update.alpha = alpha;
    a.input_slots = {a.input_slots[0]};
    a.input_layouts = {a.input_layouts[0]};
    for (size_t k = 0; k < es.input_slots.size(); ++k) {
      a.input_slots.push_back(es.input_slots[k]);
      a.input_layouts.push_back(es.input_layouts[k]);
    }
    a.flops += es.flops;
    removed[e] = true;
    ++fused;
  }
  if (!fused) return 0;
  std::vector<Step> kept;
  for (int i = 0; i < n; ++i)
    if (!removed[i]) kept.push_back(std::move(p.steps[i]));
  p.steps = std::move(kept);
  // Steps moved: lifetimes change, and an input that used to die before the
  // moved einsum must not be handed to an output any more.
  assign_lifetimes(p);
  assign_donors(p);
  return fused;
}

FusionStats fuse_elementwise(Program& program) {
  FusionPlanner planner(program);
  planner.plan();
  FusionStats stats;
  Program fused = planner.rewrite(&stats);
  assign_lifetimes(fused);
  assign_donors(fused);
  program = std::move(fused);
  return stats;
}

}  // namespace mtf
