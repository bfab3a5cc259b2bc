#include "lowering/program.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/check.h"
#include "kernels/kernels.h"
#include "mtf/errors.h"
#include "ops/op_util.h"

namespace mtf {

const char* step_kind_name(Step::Kind k) {
  switch (k) {
    case Step::Kind::kCompute:
      return "compute";
    case Step::Kind::kAllgather:
      return "allgather";
    case Step::Kind::kAllreduce:
      return "allreduce";
    case Step::Kind::kSplit:
      return "split";
    case Step::Kind::kHalo:
      return "halo";
    case Step::Kind::kAlltoall:
      return "alltoall";
  }
  return "?";
}

std::string step_op_type(const Step& s) {
  if (s.kind != Step::Kind::kCompute) return step_kind_name(s.kind);
  if (s.update.einsum) return "einsum+" + s.op->type();  // fuse_updates()
  return s.fusion.ops.size() > 1 ? "fused" : s.op->type();
}

namespace {

std::string axes_name(const MeshShape& mesh, const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) s += (s.empty() ? "" : "+") + mesh.dims()[a].name;
  return s;
}

}  // namespace

bool Program::has_collectives() const {
  for (const Step& s : steps)
    if (s.kind != Step::Kind::kCompute && s.kind != Step::Kind::kSplit) return true;
  return false;
}

int64_t Program::slot_bytes(int slot) const {
  return slot_layouts[slot].slice_shape().num_elements() *
         static_cast<int64_t>(dtype_size(slot_dtypes[slot]));
}

double Program::total_flops() const {
  double f = 0;
  for (const auto& s : steps) f += s.flops;
  return f;
}

ProgramCounters Program::counters() const {
  ProgramCounters c;
  c.flops = total_flops();
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit) continue;
    const std::string key =
        std::string(step_kind_name(s.kind)) + "/" + axes_name(mesh, s.collective.mesh_axes);
    c.bytes[key] += s.collective.bytes;
    c.bytes_by_op[s.op->name()][key] += s.collective.bytes;
  }
  return c;
}

std::string ProgramCounters::to_string() const {
  std::ostringstream os;
  os << "flops per processor: " << flops << "\n";
  for (const auto& [k, b] : bytes) os << "bytes sent per processor, " << k << ": " << b << "\n";
  for (const auto& [op, m] : bytes_by_op)
    for (const auto& [k, b] : m) os << "  op " << op << ": " << k << " " << b << " bytes\n";
  return os.str();
}

std::string Program::to_string() const {
  std::ostringstream os;
  os << "program on mesh \"" << mesh.to_string() << "\": " << steps.size() << " steps, "
     << total_flops() << " flops per processor\n";
  for (const auto& s : steps) {
    os << "  " << step_kind_name(s.kind) << " " << s.op->name();
    if (s.kind == Step::Kind::kCompute) os << " = " << step_op_type(s);
    if (s.fusion.ops.size() > 1) os << "[" << s.fusion.expr->describe() << "]";
    os << "(";
    for (size_t i = 0; i < s.input_slots.size(); ++i)
      os << (i ? ", " : "") << "%" << s.input_slots[i];
    os << ") ->";
    for (size_t i = 0; i < s.output_slots.size(); ++i)
      os << " %" << s.output_slots[i] << s.output_layouts[i].to_string() << " slice "
         << s.output_layouts[i].slice_shape().to_string();
    if (s.kind != Step::Kind::kCompute) {
      os << " over " << axes_name(mesh, s.collective.mesh_axes);
      if (s.kind != Step::Kind::kSplit) os << ", " << s.collective.bytes << " bytes";
    } else {
      os << "  flops=" << s.flops;
    }
    os << "\n";
  }
  return os.str();
}

namespace {

// Builds a program step by step, tracking every slot's layout.
class Lowerer {
 public:
  Lowerer(const MeshShape& mesh, const LayoutRules& rules, bool whole_sums)
      : mesh_(mesh), rules_(rules), whole_sums_(whole_sums) {
    rules.validate(mesh);
    p_.mesh = mesh;
  }

  int new_slot(const TensorLayout& layout, DType dtype) {
    p_.slot_layouts.push_back(layout);
    p_.slot_dtypes.push_back(dtype);
    return p_.num_slots++;
  }

  // A slot holding `slot` made whole along tensor axes whose dimension is in `whole`.
  int gathered(int slot, const Operation& op, const std::set<std::string>& whole) {
    for (int t = 0; t < p_.slot_layouts[slot].shape().ndims(); ++t) {
      const TensorLayout& l = p_.slot_layouts[slot];
      const int axis = l.tensor_to_mesh()[t];
      if (axis < 0 || !whole.count(l.shape()[t].name)) continue;
      std::vector<int> t2m = l.tensor_to_mesh();
      t2m[t] = -1;
      Step s;
      s.kind = Step::Kind::kAllgather;
      s.collective.tensor_axis = t;
      s.collective.bytes = l.slice_size() * static_cast<int64_t>(dtype_size(p_.slot_dtypes[slot])) *
                           (mesh_.dims()[axis].size - 1);
      slot = relayout(std::move(s), slot, op, axis, t2m);
    }
    return slot;
  }

  // Appends collective or split step s (its kind, tensor axes and bytes set)
  // moving `slot` along mesh `axis` to the layout t2m; returns the new slot.
  int relayout(Step s, int slot, const Operation& op, int axis, const std::vector<int>& t2m) {
    const TensorLayout out = with_axes(p_.slot_layouts[slot], t2m);
    s.op = &op;
    s.input_slots = {slot};
    s.collective.mesh_axes = {axis};
    const int made = new_slot(out, p_.slot_dtypes[slot]);
    s.output_slots = {made};
    s.output_layouts = {out};
    p_.steps.push_back(std::move(s));
    return made;
  }

  // `slot` (input `input` of op) with every split axis the op reads through
  // a window replaced by that window, brought by a halo step unless every
  // window is the processor's own block; each window is added to `windows`.
  int windowed(int slot, const Operation& op, int input, std::vector<StepWindow>* windows) {
    for (int t = 0; t < p_.slot_layouts[slot].shape().ndims(); ++t) {
      const TensorLayout& l = p_.slot_layouts[slot];
      const int axis = l.tensor_to_mesh()[t];
      if (axis < 0) continue;
      const Dimension& d = l.shape()[t];
      const int64_t n = mesh_.dims()[axis].size;
      if (n == 1) continue;  // the processor holds the whole dimension
      StepWindow w;
      w.input = input;
      w.tensor_axis = t;
      w.mesh_axis = axis;
      w.rows.whole = d.size;
      w.rows.block = d.size / n;
      w.rows.wrap = op.input_window_wraps(input);
      bool reads_window = false;
      for (int64_t pos = 0; pos < n; ++pos) {
        int64_t begin = 0, end = 0;
        if (!op.input_window(input, d.name, pos, n, &begin, &end)) break;
        reads_window = true;
        MTF_CHECK(end >= begin);
        w.rows.begin.push_back(begin);
        w.rows.extent = std::max(w.rows.extent, end - begin);
      }
      if (!reads_window) continue;
      if (w.rows.is_trivial()) {
        windows->push_back(std::move(w));
        continue;
      }
      std::vector<int> t2m = l.tensor_to_mesh();
      const TensorLayout out = with_axes(l.shape().resize(d.name, n * w.rows.extent), t2m);
      Step s;
      s.kind = Step::Kind::kHalo;
      s.op = &op;
      s.input_slots = {slot};
      s.collective.mesh_axes = {axis};
      s.collective.tensor_axis = t;
      const DType dtype = p_.slot_dtypes[slot];
      const int64_t row_elements = l.slice_size() / std::max<int64_t>(1, w.rows.block);
      int64_t most = 0;
      for (int pos = 0; pos < n; ++pos) most = std::max(most, w.rows.rows_sent(pos));
      s.collective.bytes = most * row_elements * static_cast<int64_t>(dtype_size(dtype));
      slot = new_slot(out, dtype);
      s.output_slots = {slot};
      s.output_layouts = {out};
      StepWindow made = w;
      made.input = 0;
      s.windows = {made};
      p_.steps.push_back(std::move(s));
      windows->push_back(std::move(w));
    }
    return slot;
  }

  // One alltoall along `axis`: tensor axis gather_t (split on it) is made
  // whole and split_t (whole) split.
  int alltoall(int slot, const Operation& op, int axis, int split_t, int gather_t) {
    const TensorLayout& l = p_.slot_layouts[slot];
    std::vector<int> t2m = l.tensor_to_mesh();
    t2m[gather_t] = -1;
    t2m[split_t] = axis;
    Step s;
    s.kind = Step::Kind::kAlltoall;
    s.collective.tensor_axis = split_t;
    s.collective.gather_axis = gather_t;
    const int64_t n = mesh_.dims()[axis].size;
    s.collective.bytes =
        l.slice_size() * static_cast<int64_t>(dtype_size(p_.slot_dtypes[slot])) * (n - 1) / n;
    return relayout(std::move(s), slot, op, axis, t2m);
  }

  // A reshape that only renames dimensions (the same sizes in the same
  // order) keeps each processor's block as it is once its input is laid out
  // like its output, position by position. So the input is brought to that
  // layout: a mesh axis that moves from one position to another is an
  // alltoall (as Mesh TensorFlow's mixture of experts moves the batch's axis
  // to the experts), one the output does not use an allgather, one the
  // output adds a split; then the reshape runs on the blocks. False for
  // other ops.
  bool lower_renaming_reshape(const Operation& op, std::map<int64_t, int>& slot_of) {
    if (op.type() != "reshape") return false;
    const Shape& in = op.inputs()[0].shape();
    const Shape& out = op.output(0).shape();
    if (in.ndims() != out.ndims()) return false;
    for (int t = 0; t < in.ndims(); ++t)
      if (in[t].size != out[t].size) return false;
    const TensorLayout final_layout = TensorLayout::make(out, rules_, mesh_, op.output(0).name());
    const std::vector<int>& want = final_layout.tensor_to_mesh();
    int slot = slot_of.at(op.inputs()[0].id());
    for (int t = 0; t < in.ndims(); ++t) {
      const int axis = p_.slot_layouts[slot].tensor_to_mesh()[t];
      if (axis < 0 || axis == want[t]) continue;
      int to = -1;
      for (int u = 0; u < in.ndims(); ++u)
        if (want[u] == axis && p_.slot_layouts[slot].tensor_to_mesh()[u] < 0) to = u;
      slot = to >= 0 ? alltoall(slot, op, axis, to, t) : gathered(slot, op, {in[t].name});
    }
    slot = split_to(slot, op, with_axes(in, want));
    reshape_blocks(op, slot, final_layout, slot_of);
    return true;
  }

  // A reshape whose every split keeps its element offset — for each mesh
  // axis, the dimensions before the split one hold as many elements in the
  // input's layout as in the output's (or neither splits over it) — maps
  // each processor's row-major block onto its own output block, as Mesh
  // TensorFlow's reshape lowering has it: it runs on the blocks and nothing
  // moves, whatever the dimensions' names and sizes. False otherwise.
  bool lower_aligned_reshape(const Operation& op, std::map<int64_t, int>& slot_of) {
    if (op.type() != "reshape") return false;
    const int slot = slot_of.at(op.inputs()[0].id());
    const TensorLayout& from = p_.slot_layouts[slot];
    const TensorLayout to =
        TensorLayout::make(op.output(0).shape(), rules_, mesh_, op.output(0).name());
    // The elements before the dimension split over `axis`, or -1 (none).
    auto offset_of = [](const TensorLayout& l, int axis) -> int64_t {
      int64_t before = 1;
      for (int t = 0; t < l.shape().ndims(); ++t) {
        if (l.tensor_to_mesh()[t] == axis) return before;
        before *= l.shape()[t].size;
      }
      return -1;
    };
    for (int axis = 0; axis < mesh_.ndims(); ++axis)
      if (offset_of(from, axis) != offset_of(to, axis)) return false;
    reshape_blocks(op, slot, to, slot_of);
    return true;
  }

  // The reshape's compute step on `slot`'s blocks, its output laid out as `to`.
  void reshape_blocks(const Operation& op, int slot, const TensorLayout& to,
                      std::map<int64_t, int>& slot_of) {
    Step c;
    c.kind = Step::Kind::kCompute;
    c.op = &op;
    c.input_slots = {slot};
    c.input_layouts = {p_.slot_layouts[slot]};
    const int result = new_slot(to, op.output(0).dtype());
    c.output_slots = {result};
    c.output_layouts = {to};
    p_.steps.push_back(std::move(c));
    slot_of[op.output(0).id()] = result;
  }

  void lower_op(const Operation& op, std::map<int64_t, int>& slot_of) {
    if (lower_aligned_reshape(op, slot_of) || lower_renaming_reshape(op, slot_of)) return;
    std::vector<TensorLayout> final_layouts;
    std::set<int> out_axes;
    for (const Tensor& out : op.outputs()) {
      final_layouts.push_back(TensorLayout::make(out.shape(), rules_, mesh_, out.name()));
      for (int a : final_layouts.back().tensor_to_mesh())
        if (a >= 0) out_axes.insert(a);
    }
    std::vector<std::string> reduced = op.reduced_dims();
    const std::set<std::string> whole = whole_dims(op, slot_of, out_axes, reduced);
    Step c;
    c.kind = Step::Kind::kCompute;
    c.op = &op;
    const std::set<int> reduce_axes = add_inputs(c, op, slot_of, whole, reduced);
    c.collective.mesh_axes.assign(reduce_axes.begin(), reduce_axes.end());
    std::vector<TensorLayout> compute_layouts;
    for (const TensorLayout& f : final_layouts) {
      std::vector<int> t2m = f.tensor_to_mesh();
      for (int t = 0; t < f.shape().ndims(); ++t)
        if (whole.count(f.shape()[t].name)) t2m[t] = -1;
      compute_layouts.push_back(with_axes(f, t2m));
      c.output_slots.push_back(new_slot(
          compute_layouts.back(), op.output(static_cast<int>(c.output_slots.size())).dtype()));
      c.output_layouts.push_back(compute_layouts.back());
    }
    c.flops = op.flops() * flop_share(compute_layouts, reduce_axes);
    const std::vector<int> outs = c.output_slots;
    p_.steps.push_back(std::move(c));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!reduce_axes.empty())
        add_allreduce(op, static_cast<int>(i), outs[i], compute_layouts[i], reduce_axes);
      slot_of[op.output(static_cast<int>(i)).id()] = split_to(outs[i], op, final_layouts[i]);
    }
  }

  // The dimensions the op computes whole: those it declares unsplittable,
  // its reduced ones in whole-sums mode (then `reduced` is emptied), and a
  // split input dimension that no output has, unless the op reduces over it
  // (partial results are then allreduced) and its mesh axis splits no output.
  // (Ops without outputs, the assignments, work slice by slice.)
  std::set<std::string> whole_dims(const Operation& op, const std::map<int64_t, int>& slot_of,
                                   const std::set<int>& out_axes,
                                   std::vector<std::string>& reduced) const {
    std::set<std::string> whole;
    for (const std::string& d : op.unsplittable_dims()) whole.insert(d);
    if (whole_sums_ && op.reduction() == ReduceOp::kSum) {
      whole.insert(reduced.begin(), reduced.end());
      reduced.clear();
    }
    for (int i = 0; i < (op.num_outputs() ? static_cast<int>(op.inputs().size()) : 0); ++i) {
      const Tensor& in = op.inputs()[i];
      if (!op.reads_input(i)) continue;
      const TensorLayout& l = p_.slot_layouts[slot_of.at(in.id())];
      for (int t = 0; t < in.shape().ndims(); ++t) {
        const int axis = l.tensor_to_mesh()[t];
        if (axis < 0) continue;
        const std::string& name = in.shape()[t].name;
        bool in_output = false;
        for (const Tensor& out : op.outputs()) in_output = in_output || out.shape().contains(name);
        const bool is_reduced = std::find(reduced.begin(), reduced.end(), name) != reduced.end();
        if ((!in_output && !is_reduced) || (is_reduced && out_axes.count(axis))) whole.insert(name);
      }
    }
    return whole;
  }

  // Gives the compute step `c` its inputs, gathered where `whole` says and
  // windowed where the op reads through windows; returns the mesh axes that
  // split a reduced dimension (the outputs are allreduced over them).
  std::set<int> add_inputs(Step& c, const Operation& op, const std::map<int64_t, int>& slot_of,
                           const std::set<std::string>& whole,
                           const std::vector<std::string>& reduced) {
    std::set<int> reduce_axes;
    for (const Tensor& in : op.inputs()) {
      const int input = static_cast<int>(c.input_slots.size());
      if (!op.reads_input(input)) {  // passed as it lies, never read
        c.input_slots.push_back(slot_of.at(in.id()));
        c.input_layouts.push_back(p_.slot_layouts[c.input_slots.back()]);
        continue;
      }
      const int slot = windowed(gathered(slot_of.at(in.id()), op, whole), op, input, &c.windows);
      c.input_slots.push_back(slot);
      const TensorLayout& l = p_.slot_layouts[slot];
      c.input_layouts.push_back(l);
      for (int t = 0; t < in.shape().ndims(); ++t)
        if (l.tensor_to_mesh()[t] >= 0 &&
            std::find(reduced.begin(), reduced.end(), in.shape()[t].name) != reduced.end())
          reduce_axes.insert(l.tensor_to_mesh()[t]);
    }
    return reduce_axes;
  }

  // The share of the op's flops one processor does: its outputs' smallest
  // share, divided among the processors of the reduced axes.
  double flop_share(const std::vector<TensorLayout>& compute_layouts,
                    const std::set<int>& reduce_axes) const {
    if (compute_layouts.empty()) return 1.0;
    double share = 1;
    for (const TensorLayout& l : compute_layouts) {
      share =
          std::min(share, static_cast<double>(l.slice_size()) /
                              std::max<double>(1, static_cast<double>(l.shape().num_elements())));
    }
    for (int a : reduce_axes) share /= static_cast<double>(mesh_.dims()[a].size);
    return share;
  }

  // The allreduce of output `i` (in `slot`, laid out as `layout`) over `axes`.
  void add_allreduce(const Operation& op, int i, int slot, const TensorLayout& layout,
                     const std::set<int>& axes) {
    Step r;
    r.kind = Step::Kind::kAllreduce;
    r.op = &op;
    r.input_slots = {slot};
    r.output_slots = {slot};
    r.output_layouts = {layout};
    r.collective.mesh_axes.assign(axes.begin(), axes.end());
    r.collective.reduce_op = op.reduction();
    int64_t group = 1;
    for (int a : r.collective.mesh_axes) group *= mesh_.dims()[a].size;
    const int64_t bytes =
        layout.slice_size() * static_cast<int64_t>(dtype_size(op.output(i).dtype()));
    r.collective.bytes = 2 * bytes * (group - 1) / group;
    p_.steps.push_back(std::move(r));
  }

  // Splits `slot` (whole where `target` splits) down to `target`.
  int split_to(int slot, const Operation& op, const TensorLayout& target) {
    TensorLayout l = p_.slot_layouts[slot];
    for (int t = 0; t < target.shape().ndims(); ++t) {
      if (target.tensor_to_mesh()[t] == l.tensor_to_mesh()[t]) continue;
      MTF_CHECK(l.tensor_to_mesh()[t] < 0);
      std::vector<int> t2m = l.tensor_to_mesh();
      t2m[t] = target.tensor_to_mesh()[t];
      Step s;
      s.kind = Step::Kind::kSplit;
      s.collective.tensor_axis = t;
      slot = relayout(std::move(s), slot, op, t2m[t], t2m);
      l = p_.slot_layouts[slot];
    }
    return slot;
  }

  Program& program() { return p_; }

 private:
  TensorLayout with_axes(const TensorLayout& l, const std::vector<int>& t2m) const {
    return with_axes(l.shape(), t2m);
  }
  TensorLayout with_axes(const Shape& shape, const std::vector<int>& t2m) const {
    return TensorLayout::with_mesh_axes(shape, mesh_, t2m);
  }
  const MeshShape& mesh_;
  const LayoutRules& rules_;
  const bool whole_sums_;
  Program p_;
};

}  // namespace

void assign_lifetimes(Program& p) {
  const std::set<int> fetched(p.fetch_slots.begin(), p.fetch_slots.end());
  std::map<int, size_t> last_reader;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    p.steps[i].free_after.clear();
    for (int slot : p.steps[i].input_slots) last_reader[slot] = i;
  }
  for (const auto& [slot, step] : last_reader) {
    const Step& s = p.steps[step];
    const bool in_place =
        std::find(s.output_slots.begin(), s.output_slots.end(), slot) != s.output_slots.end();
    if (!fetched.count(slot) && !in_place) p.steps[step].free_after.push_back(slot);
  }
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int slot : p.steps[i].output_slots)
      if (!last_reader.count(slot) && !fetched.count(slot)) p.steps[i].free_after.push_back(slot);
}

Program lower(const Graph& graph, const std::vector<Tensor>& fetches,
              const std::vector<const Operation*>& targets, const MeshShape& mesh,
              const LayoutRules& rules, bool whole_sums) {
  std::set<const Operation*> needed;
  std::vector<const Operation*> stack;
  for (const Tensor& t : fetches) {
    if (!t.valid()) throw ValueError("lowering a run: a fetch is an invalid mtf::Tensor");
    if (&t.graph() != &graph)
      throw ValueError("lowering a run: fetch " + t.describe() + " belongs to another graph");
    stack.push_back(&t.op());
  }
  for (const Operation* op : targets) {
    if (!op) throw ValueError("lowering a run: a target is a null Operation*");
    if (&op->graph() != &graph)
      throw ValueError("lowering a run: target \"" + op->name() + "\" belongs to another graph");
    stack.push_back(op);
  }
  while (!stack.empty()) {
    const Operation* op = stack.back();
    stack.pop_back();
    if (!needed.insert(op).second) continue;
    for (const Tensor& in : op->inputs()) stack.push_back(&in.op());
  }

  Lowerer lw(mesh, rules, whole_sums);
  std::map<int64_t, int> slot_of;
  for (const auto& owned : graph.operations()) {
    const Operation* op = owned.get();
    if (!needed.count(op)) continue;
    try {
      lw.lower_op(*op, slot_of);
    } catch (const LayoutError& e) {
      // Name the op, and the user's call that made it when it is internal.
      throw LayoutError(op->attribution() + ": " + e.what());
    }
    if (op->type() == "placeholder") lw.program().placeholders.push_back(op);
  }
  Program& p = lw.program();
  for (const Tensor& t : fetches) p.fetch_slots.push_back(slot_of.at(t.id()));
  assign_lifetimes(p);
  return p;
}

namespace {

// A float32 operand (or a bfloat16 one beside it, widened) of an einsum
// whose slices multiply matrices (not dot products or broadcast products,
// which need no BLAS), or of a convolution.
bool step_runs_float32_blas(const Program& p, const Step& s) {
  if (s.kind != Step::Kind::kCompute || s.fusion.expr) return false;
  if (s.update.einsum) return true;  // fused updates are float32
  const bool einsum = ops::is_einsum(*s.op);
  if (!einsum && s.op->type().rfind("conv", 0) != 0) return false;
  bool float32_operand = false;
  for (int slot : s.input_slots)
    float32_operand = float32_operand || p.slot_dtypes[slot] == float32;
  if (!float32_operand || !einsum) return float32_operand;
  std::vector<Shape> slices;
  for (const TensorLayout& l : s.input_layouts) slices.push_back(l.slice_shape());
  const auto plan = kernels::plan_einsum(slices, s.output_layouts[0].slice_shape(), float32, false);
  return !kernels::einsum_gemm_calls(*plan).empty();
}

}  // namespace

bool runs_float32_blas(const Program& program) {
  for (const Step& s : program.steps)
    if (step_runs_float32_blas(program, s)) return true;
  return false;
}

void assign_kernel_threads(Program& program) {
  const bool blas = runs_float32_blas(program);
  for (Step& s : program.steps) {
    if (s.kind != Step::Kind::kCompute) continue;
    bool bf16 = false;
    for (int slot : s.input_slots) bf16 = bf16 || program.slot_dtypes[slot] == bfloat16;
    for (int slot : s.output_slots) bf16 = bf16 || program.slot_dtypes[slot] == bfloat16;
    s.threaded = bf16 || !blas;
  }
}

}  // namespace mtf
