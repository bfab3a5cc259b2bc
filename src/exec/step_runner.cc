#include "exec/step_runner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"
#include "kernels/blas_threads.h"
#include "kernels/fused_elementwise.h"
#include "kernels/gemm_bfloat16.h"
#include "kernels/kernels.h"

namespace mtf::exec {

// Rethrows an error raised while running `op` as the same type, with the op
// named first, so a failure deep in a kernel says where in the graph it was.
[[noreturn]] void rethrow_in_op(const Operation& op, const Error& e) {
  // Not the op's doing: the message stays as it was.
  if (dynamic_cast<const InterruptedError*>(&e)) throw InterruptedError(e.what());
  const std::string msg = "while running " + op.attribution() + ": " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
  if (dynamic_cast<const IoError*>(&e)) throw IoError(msg);
  if (dynamic_cast<const OutOfMemoryError*>(&e)) throw OutOfMemoryError(msg);
  if (dynamic_cast<const TimeoutError*>(&e)) throw TimeoutError(msg);
  if (dynamic_cast<const PeerLostError*>(&e)) throw PeerLostError(msg);
  if (dynamic_cast<const LayoutError*>(&e)) throw LayoutError(msg);
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(msg);
  if (dynamic_cast<const NumericsError*>(&e)) throw NumericsError(msg);
  throw Error(msg);
}

namespace {

// A fused step: each output takes over its donor input's buffer when no
// other tensor shares it (the input dies at this step), else a fresh one.
std::vector<HostTensor> compute_fused(const Step& s, const std::vector<HostTensor>& slots,
                                      const std::vector<const HostTensor*>& inputs,
                                      bool fixed_order) {
  std::vector<HostTensor> outputs;
  std::vector<HostTensor*> out_ptrs;
  outputs.reserve(s.output_slots.size());
  for (size_t k = 0; k < s.output_slots.size(); ++k) {
    const Shape shape = s.output_layouts[k].slice_shape();
    const int donor = k < s.fusion.donors.size() ? s.fusion.donors[k] : -1;
    const HostTensor* d = donor >= 0 ? &slots[s.input_slots[donor]] : nullptr;
    const DType dtype = k < s.fusion.output_dtypes.size() ? s.fusion.output_dtypes[k] : float32;
    if (d && d->sole_owner() && d->shape() == shape && d->dtype() == dtype) {
      outputs.push_back(*d);
    } else {
      outputs.emplace_back(shape, dtype);
    }
  }
  for (HostTensor& t : outputs) out_ptrs.push_back(&t);
  kernels::fused_elementwise(*s.fusion.expr, inputs, out_ptrs, fixed_order,
                             kernels::kernel_threads());
  return outputs;
}

// True when the op must run on float32 copies of bfloat16 slices, or on
// int32 (0 / 1) copies of bool slices: an op without kernels of its own for
// those storage types (Operation::computes_bfloat16).
bool runs_widened(const Operation& op, const std::vector<const HostTensor*>& inputs) {
  if (op.computes_bfloat16()) return false;
  for (const HostTensor* t : inputs)
    if (widened_dtype(t->dtype()) != t->dtype()) return true;
  for (int i = 0; i < op.num_outputs(); ++i)
    if (widened_dtype(op.output(i).dtype()) != op.output(i).dtype()) return true;
  return false;
}

// Narrows the widened op's results for bfloat16 and bool tensors and
// variables (from `first_assignment` on): float32 rounded to bfloat16,
// int32 to bool (nonzero).
void narrow_results(const Operation& op, std::vector<HostTensor>& outputs, RunState& state,
                    size_t first_assignment) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const DType want = op.output(static_cast<int>(i)).dtype();
    if (outputs[i].dtype() != want && widened_dtype(want) != want)
      outputs[i] = outputs[i].as_dtype(want);
  }
  for (size_t k = first_assignment; k < state.pending_assignments.size(); ++k) {
    auto& [variable, value] = state.pending_assignments[k];
    const DType want = variable->output(0).dtype();
    if (value.dtype() != want && widened_dtype(want) != want) value = value.as_dtype(want);
  }
}

}  // namespace

// Runs a compute step for processor pnum; returns its outputs.
namespace {

// The first NaN or infinity in a float32 or bfloat16 tensor: its flat index,
// or -1.
int64_t first_non_finite(const HostTensor& t) {
  if (t.dtype() == float32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i)
      if (!std::isfinite(p[i])) return i;
  } else if (t.dtype() == bfloat16) {
    const uint16_t* p = static_cast<const uint16_t*>(t.raw_data());
    // Exponent all ones: infinity or NaN.
    for (int64_t i = 0; i < t.num_elements(); ++i)
      if ((p[i] & 0x7f80u) == 0x7f80u) return i;
  }
  return -1;
}

// NumericsError when `t` (what: "output 0", "the new value of \"w\"")
// holds a NaN or an infinity; the caller names the op.
void check_finite(const HostTensor& t, const std::string& what, int64_t pnum) {
  const int64_t at = first_non_finite(t);
  if (at < 0) return;
  const float v =
      t.dtype() == float32 ? t.data<float>()[at] : t.as_dtype(float32).data<float>()[at];
  std::vector<int64_t> index(static_cast<size_t>(t.shape().ndims()));
  int64_t rest = at;
  for (int d = t.shape().ndims() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = rest % t.shape()[d].size;
    rest /= t.shape()[d].size;
  }
  std::string where;
  for (size_t d = 0; d < index.size(); ++d)
    where += (d ? ", " : "") + t.shape()[static_cast<int>(d)].name + " " + std::to_string(index[d]);
  throw NumericsError(detail::str_cat("check_numerics: ", what, " holds ",
                                      std::isnan(v) ? "NaN" : (v > 0 ? "inf" : "-inf"), " at [",
                                      where, "] of processor ", pnum, "'s slice ",
                                      t.shape().to_string(), "; no variable was changed"));
}

std::vector<HostTensor> compute_step(const Step& s, int64_t pnum,
                                     const std::vector<HostTensor>& slots, RunState& state);

}  // namespace

std::vector<HostTensor> compute(const Step& s, int64_t pnum, const std::vector<HostTensor>& slots,
                                RunState& state) {
  const size_t first_assignment = state.pending_assignments.size();
  std::vector<HostTensor> outputs = compute_step(s, pnum, slots, state);
  if (state.check_numerics) {
    for (size_t i = 0; i < outputs.size(); ++i)
      check_finite(outputs[i], "output " + std::to_string(i), pnum);
    for (size_t k = first_assignment; k < state.pending_assignments.size(); ++k) {
      const auto& [variable, value] = state.pending_assignments[k];
      check_finite(value, "the new value of \"" + variable->name() + "\"", pnum);
    }
  }
  return outputs;
}

namespace {

std::vector<HostTensor> compute_step(const Step& s, int64_t pnum,
                                     const std::vector<HostTensor>& slots, RunState& state) {
  std::vector<const HostTensor*> inputs;
  for (int slot : s.input_slots) inputs.push_back(&slots[slot]);
  const kernels::KernelThreadsScope threads(s.threaded ? kernels::bfloat16_kernel_threads() : 1);
  if (s.fusion.expr) return compute_fused(s, slots, inputs, state.reproducible);
  if (s.update.einsum) {
    // var + alpha * einsum(...), straight into the variable's next value.
    MTF_CHECK(s.kernel_plan != nullptr);
    const HostTensor& var = *inputs[0];
    HostTensor next(var.shape(), var.dtype());
    std::copy(var.data<float>(), var.data<float>() + var.num_elements(), next.data<float>());
    const std::vector<const HostTensor*> operands(inputs.begin() + 1, inputs.end());
    kernels::einsum_accumulate(*s.kernel_plan, operands, s.update.alpha, next);
    state.pending_assignments.emplace_back(&s.op->inputs()[0].op(), std::move(next));
    return {};
  }
  std::vector<Shape> shapes;
  std::vector<std::vector<int64_t>> offsets;
  for (const TensorLayout& l : s.output_layouts) {
    shapes.push_back(l.slice_shape());
    offsets.push_back(l.slice_begin(pnum));
  }
  std::vector<HostTensor> outputs(s.output_slots.size());
  std::vector<std::vector<int64_t>> input_offsets;
  for (const TensorLayout& l : s.input_layouts) input_offsets.push_back(l.slice_begin(pnum));
  for (const StepWindow& w : s.windows) {
    const int64_t position = s.input_layouts[w.input].mesh().coordinates(pnum)[w.mesh_axis];
    input_offsets[w.input][w.tensor_axis] = w.rows.begin[position];
  }
  const bool widened = runs_widened(*s.op, inputs);
  std::vector<HostTensor> wide_inputs;
  if (widened) {
    wide_inputs.reserve(inputs.size());
    for (const HostTensor*& in : inputs) {
      if (widened_dtype(in->dtype()) == in->dtype()) continue;
      wide_inputs.push_back(in->as_dtype(widened_dtype(in->dtype())));
      in = &wide_inputs.back();
    }
  }
  const size_t first_assignment = state.pending_assignments.size();
  KernelContext ctx(*s.op, inputs, &outputs, &shapes, &offsets, &state, &input_offsets);
  ctx.set_plan(s.kernel_plan.get());
  ctx.set_widened(widened);
  ctx.set_placement(pnum, &s.input_layouts, &s.collective.mesh_axes);
  s.op->compute(ctx);
  if (widened) narrow_results(*s.op, outputs, state, first_assignment);
  for (size_t i = 0; i < outputs.size(); ++i) {
    MTF_CHECK(outputs[i].valid());
    MTF_CHECK(outputs[i].shape() == shapes[i]);
  }
  return outputs;
}

}  // namespace

// This processor's piece of `whole` along the split step's tensor axis.
HostTensor split_piece(const Step& s, int64_t pnum, const HostTensor& whole) {
  const TensorLayout& l = s.output_layouts[0];
  HostTensor out(l.slice_shape(), whole.dtype());
  kernels::slice(whole, s.collective.tensor_axis, l.slice_begin(pnum)[s.collective.tensor_axis],
                 out);
  return out;
}

HostTensor halo_window(const Step& s, int64_t pnum, const MeshShape& mesh,
                       const std::function<const HostTensor&(int position)>& block) {
  const StepWindow& w = s.windows.at(0);
  const int p = static_cast<int>(mesh.coordinates(pnum)[w.mesh_axis]);
  const int axis = w.tensor_axis;
  const HostTensor& own = block(p);
  HostTensor out(s.output_layouts[0].slice_shape(), own.dtype());
  kernels::fill(out, 0.f);
  for (int q = 0; q < w.rows.parts(); ++q) {
    for (const HaloPiece& rows : w.rows.pieces(q, p)) {
      const HostTensor& from = block(q);
      std::vector<int64_t> at(from.shape().ndims(), 0);
      at[axis] = rows.first - q * w.rows.block;
      const HostTensor piece = kernels::block_of(
          from, at, from.shape().resize(from.shape()[axis].name, rows.last - rows.first));
      at[axis] = rows.at;
      kernels::insert_block(out, at, piece);
    }
  }
  return out;
}

// `blocks` holds n slices back to back ([n, slice...]); returns them
// concatenated along tensor axis `axis` of the slice.
HostTensor concat_gathered(const HostTensor& blocks, int64_t n, const Shape& slice, int axis) {
  const std::string g = "__gathered__";
  std::vector<Dimension> from{{g, n}}, to;
  for (const Dimension& d : slice) from.push_back(d);
  for (int i = 0; i < slice.ndims(); ++i) {
    if (i == axis) to.push_back({g, n});
    to.push_back(slice[i]);
  }
  HostTensor arranged(Shape(to), blocks.dtype());
  kernels::broadcast_copy(blocks.reshaped(Shape(from)), arranged);
  return arranged.reshaped(slice.resize(slice[axis].name, slice[axis].size * n));
}

}  // namespace mtf::exec
