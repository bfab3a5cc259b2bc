// program.h — the SPMD program every processor of a mesh runs: a list of
// steps over slots (tensor slices), with the layout of every slot, so that
// processor `pnum` knows the shape and offset of each of its slices.
//
// Step kinds: a compute step runs an op's slice-wise kernel; an allgather
// makes a slot whole along one tensor axis by concatenating the slices of
// the processors along one mesh axis; an allreduce combines partial results
// over mesh axes (in place); a split keeps this processor's piece of a slot
// that is whole along a tensor axis (no communication); a halo brings each
// processor the window of a split tensor axis that an op reads through a
// sliding window (Operation::input_window) from the processors holding it; an
// alltoall makes one tensor axis whole while splitting another along the
// same mesh axis (a relayout by position). lower() builds the
// program from a graph, a mesh and layout rules; on a one-processor mesh it
// has compute steps only. Executors (simd/, placement/) run it; it prints
// as text and yields counters.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/fused_elementwise.h"
#include "mtf/graph.h"
#include "mtf/layout.h"
#include "mtf/reduce_op.h"

namespace mtf {

// The window of a split tensor axis a processor reads (halo steps make it;
// compute steps read it as input `input`'s slice): `rows` per position
// along `mesh_axis`. The window slot's layout is the tensor with that axis
// resized to parts x extent and split over mesh_axis, so its slice shape is
// the window's.
struct StepWindow {
  int input = 0;
  int tensor_axis = -1;
  int mesh_axis = -1;
  HaloWindows rows;
};

// A collective's or split's own fields (Step::collective).
struct StepCollective {
  // allreduce: its axes; allgather / split / halo: one axis; compute: the
  // axes its outputs are allreduced over next (KernelContext::holds_first_copy)
  std::vector<int> mesh_axes;
  int tensor_axis = -1;  // allgather / split / halo: the tensor axis; alltoall: the one split
  int gather_axis = -1;  // alltoall: the tensor axis made whole (split before)
  ReduceOp reduce_op = ReduceOp::kSum;  // allreduce
  int64_t bytes = 0;                    // bytes each processor sends (halo: the most any one sends)
};

// A compute step made by fuse_elementwise() (Step::fusion): `expr` runs the
// ops `ops` (in program order; Step::op is the last) as one kernel over the
// step's input slots, and its output slots are the values read after this
// step (a reduction epilogue's result last).
struct StepFusion {
  std::shared_ptr<const kernels::FusedExpr> expr;  // null: not a fused step
  std::vector<const Operation*> ops;
  // Per output: the input (index into input_slots) whose buffer the output
  // may take over, or -1. Only inputs of the output's exact slice shape
  // whose last reader is this step; the executor still checks at run time
  // that no other tensor shares the buffer.
  std::vector<int> donors;
  std::vector<DType> output_dtypes;  // per output: float32 or bfloat16
};

// A step made by fuse_updates() (Step::update): Step::op is an assignment
// var <- var + alpha * value whose value was `einsum`'s result; the step
// reads the variable (input 0) and the einsum's inputs and adds the
// contraction straight into the variable's next value (the step's
// kernel_plan is the einsum's).
struct StepUpdate {
  const Operation* einsum = nullptr;  // null: not a fused update
  float alpha = 0;
};

struct Step {
  enum class Kind { kCompute, kAllgather, kAllreduce, kSplit, kHalo, kAlltoall };
  Kind kind = Kind::kCompute;
  const Operation* op = nullptr;  // the op computed, or served by the collective
  std::vector<int> input_slots;
  std::vector<int> output_slots;  // allreduce: same as input (in place)
  std::vector<TensorLayout> output_layouts;
  std::vector<TensorLayout> input_layouts;  // compute: the inputs' layouts as the kernel sees them
  std::vector<int> free_after;              // slots whose last reader is this step
  double flops = 0;                         // per processor
  // Halo steps: the window made (input 0). Compute steps: the inputs read
  // through windows, whose slice offset along tensor_axis is rows.begin.
  std::vector<StepWindow> windows;
  // Compute steps: what the op's kernel decided once from the slice shapes
  // (plan_kernels()), or null.
  std::shared_ptr<const kernels::KernelPlan> kernel_plan;
  StepCollective collective;  // collectives and splits
  StepFusion fusion;          // fused compute steps
  // Compute steps: the kernel may split its work over OpenMP threads
  // (kernels::KernelThreadsScope) — some operand is bfloat16, or no step of
  // the program runs float32 contractions on OpenBLAS, whose worker threads
  // spin for a while after each call and would take the cores OpenMP's need
  // (measured: float32 steps 1.2-1.7x slower). Set by assign_kernel_threads.
  bool threaded = false;
  StepUpdate update;  // fused optimizer updates
};

// "compute", "allgather", "allreduce", "split", "halo" or "alltoall".
const char* step_kind_name(Step::Kind kind);
// What a step runs, for profiles: its op's type, "fused" for a fused step of
// several ops, or the collective's kind.
std::string step_op_type(const Step& s);

struct ProgramCounters {
  double flops = 0;  // per processor
  // Bytes each processor sends, by "<collective>/<mesh axis>".
  std::map<std::string, int64_t> bytes;
  // The same per op: op name -> ("<collective>/<mesh axis>" -> bytes).
  std::map<std::string, std::map<std::string, int64_t>> bytes_by_op;
  std::string to_string() const;
};

struct Program {
  MeshShape mesh;
  std::vector<Step> steps;
  int num_slots = 0;
  std::vector<TensorLayout> slot_layouts;
  std::vector<DType> slot_dtypes;
  std::vector<int> fetch_slots;
  std::vector<const Operation*> placeholders;
  bool has_collectives() const;
  double total_flops() const;
  // Bytes of one processor's slice of `slot`.
  int64_t slot_bytes(int slot) const;
  ProgramCounters counters() const;
  std::string to_string() const;
};

// True when some compute step runs a float32 contraction on OpenBLAS
// (einsum and the convolutions call sgemm on float32 operands).
bool runs_float32_blas(const Program& program);

// Sets Step::threaded on every compute step.
void assign_kernel_threads(Program& program);

// Sets every step's free_after: the slots whose last reader (or, for slots
// nobody reads, whose writer) is that step, except fetched slots and slots a
// step updates in place.
void assign_lifetimes(Program& program);

// Lowers the ops that `fetches` and `targets` need, in graph order (which is
// topological), for `mesh` under `rules`. Throws LayoutError for layouts
// that cannot work, ValueError for bad fetches or targets.
// whole_sums (MeshConfig::reproducible): a sum over a split dimension gathers
// that dimension and sums it whole on each processor, instead of summing
// slices and allreducing the partial sums — so its order does not depend on
// the layout. (Max and min are exact in any order and still allreduce.)
Program lower(const Graph& graph, const std::vector<Tensor>& fetches,
              const std::vector<const Operation*>& targets, const MeshShape& mesh,
              const LayoutRules& rules, bool whole_sums = false);

}  // namespace mtf
