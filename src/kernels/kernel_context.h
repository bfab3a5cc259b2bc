// kernel_context.h — what an op's compute() sees on one processor: its input
// slices, its output slices to fill, where those slices lie in the logical
// tensors, and the state of the current run (variables, feeds, run counter).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "kernels/kernel_plan.h"
#include "mtf/graph.h"
#include "mtf/host_tensor.h"
#include "mtf/layout.h"

namespace mtf {

// State shared by all steps of one run.
// A fed value: the block of its placeholder that starts at `begin` (all
// zeros for a whole-tensor feed; a process's own block for a sharded one).
struct FedValue {
  HostTensor value;
  std::vector<int64_t> begin;
};

struct RunState {
  // Variable values as of the start of the run, by variable op.
  const std::map<const Operation*, HostTensor>* variables = nullptr;
  // New variable values, committed in order when the run ends.
  std::vector<std::pair<const Operation*, HostTensor>> pending_assignments;
  // Fed values, by placeholder tensor id.
  const std::map<int64_t, FedValue>* feeds = nullptr;
  uint64_t run_counter = 0;
  // MeshConfig::reproducible: kernels sum in a fixed order (einsum).
  bool reproducible = false;
  // MeshConfig::check_numerics: every float output scanned for NaN and
  // infinity (exec::compute).
  bool check_numerics = false;
};

// The dtype an op without kernels of its own for a storage type computes
// it in (Operation::computes_bfloat16): bfloat16 as float32, bool as int32
// 0 / 1; any other dtype as itself.
inline DType widened_dtype(DType dtype) {
  return dtype == bfloat16 ? float32 : dtype == bool_ ? int32 : dtype;
}

class KernelContext {
 public:
  KernelContext(const Operation& op, std::vector<const HostTensor*> inputs,
                std::vector<HostTensor>* outputs, const std::vector<Shape>* output_slice_shapes,
                const std::vector<std::vector<int64_t>>* output_slice_offsets, RunState* state,
                const std::vector<std::vector<int64_t>>* input_slice_offsets = nullptr)
      : op_(op),
        inputs_(std::move(inputs)),
        outputs_(outputs),
        slice_shapes_(output_slice_shapes),
        slice_offsets_(output_slice_offsets),
        state_(state),
        input_offsets_(input_slice_offsets) {}

  const Operation& op() const { return op_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const HostTensor& input(int i) const { return *inputs_[i]; }
  // Allocates output i with its slice shape and the op's dtype (float32 for
  // a bfloat16 output, int32 for a bool one, while the op runs widened: see
  // Operation::computes_bfloat16).
  HostTensor& allocate_output(int i) {
    DType dtype = op_.output(i).dtype();
    if (widened_) dtype = widened_dtype(dtype);
    (*outputs_)[i] = HostTensor((*slice_shapes_)[i], dtype);
    return (*outputs_)[i];
  }
  void set_widened(bool widened) { widened_ = widened; }
  // Sets output i to an existing tensor (shared, not copied).
  void set_output(int i, HostTensor t) { (*outputs_)[i] = std::move(t); }
  const Shape& output_slice_shape(int i) const { return (*slice_shapes_)[i]; }
  // Offset of this processor's slice of output i in the logical tensor.
  const std::vector<int64_t>& output_slice_offset(int i) const { return (*slice_offsets_)[i]; }
  // Offset of this processor's slice of input i in the logical tensor.
  const std::vector<int64_t>& input_slice_offset(int i) const { return (*input_offsets_)[i]; }
  RunState& state() { return *state_; }
  // The plan the lowering made for this step's slice shapes, or nullptr
  // (then the kernel decides from the shapes it is given).
  const kernels::KernelPlan* plan() const { return plan_; }
  void set_plan(const kernels::KernelPlan* plan) { plan_ = plan; }
  // True when this processor is the first, among the processors whose
  // outputs the lowering then allreduces together, to hold its slice of
  // input i (the others hold copies): an op that sums over its inputs'
  // elements counts each once by reading only the first copies.
  bool holds_first_copy(int i) const {
    if (!reduce_axes_ || reduce_axes_->empty()) return true;
    const TensorLayout& l = (*input_layouts_)[i];
    const std::vector<int64_t> at = l.mesh().coordinates(pnum_);
    for (int axis : *reduce_axes_) {
      const auto& t2m = l.tensor_to_mesh();
      const bool splits = std::find(t2m.begin(), t2m.end(), axis) != t2m.end();
      if (!splits && at[axis] != 0) return false;
    }
    return true;
  }
  void set_placement(int64_t pnum, const std::vector<TensorLayout>* input_layouts,
                     const std::vector<int>* reduce_axes) {
    pnum_ = pnum;
    input_layouts_ = input_layouts;
    reduce_axes_ = reduce_axes;
  }

 private:
  const Operation& op_;
  std::vector<const HostTensor*> inputs_;
  std::vector<HostTensor>* outputs_;
  const std::vector<Shape>* slice_shapes_;
  const std::vector<std::vector<int64_t>>* slice_offsets_;
  RunState* state_;
  const std::vector<std::vector<int64_t>>* input_offsets_;
  const kernels::KernelPlan* plan_ = nullptr;
  bool widened_ = false;
  int64_t pnum_ = 0;
  const std::vector<TensorLayout>* input_layouts_ = nullptr;
  const std::vector<int>* reduce_axes_ = nullptr;
};

}  // namespace mtf
