#include "exec/executor.h"

#include "core/check.h"
#include "kernels/kernels.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

// Rethrows an error raised while running `op` as the same type, with the op
// named first, so a failure deep in a kernel says where in the graph it was.
[[noreturn]] void rethrow_in_op(const Operation& op, const Error& e) {
  const std::string msg = "while running op \"" + op.name() + "\" (" + op.type() + "): " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
  if (dynamic_cast<const IoError*>(&e)) throw IoError(msg);
  if (dynamic_cast<const OutOfMemoryError*>(&e)) throw OutOfMemoryError(msg);
  if (dynamic_cast<const TimeoutError*>(&e)) throw TimeoutError(msg);
  if (dynamic_cast<const PeerLostError*>(&e)) throw PeerLostError(msg);
  if (dynamic_cast<const LayoutError*>(&e)) throw LayoutError(msg);
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(msg);
  throw Error(msg);
}

// Runs a compute step for processor pnum; returns its outputs.
std::vector<HostTensor> compute(const Step& s, int64_t pnum, const std::vector<HostTensor>& slots,
                                RunState& state) {
  std::vector<const HostTensor*> inputs;
  for (int slot : s.input_slots) inputs.push_back(&slots[slot]);
  std::vector<Shape> shapes;
  std::vector<std::vector<int64_t>> offsets;
  for (const TensorLayout& l : s.output_layouts) {
    shapes.push_back(l.slice_shape());
    offsets.push_back(l.slice_begin(pnum));
  }
  std::vector<HostTensor> outputs(s.output_slots.size());
  KernelContext ctx(*s.op, inputs, &outputs, &shapes, &offsets, &state);
  s.op->compute(ctx);
  for (size_t i = 0; i < outputs.size(); ++i) {
    MTF_CHECK(outputs[i].valid());
    MTF_CHECK(outputs[i].shape() == shapes[i]);
  }
  return outputs;
}

// This processor's piece of `whole` along the split step's tensor axis.
HostTensor split_piece(const Step& s, int64_t pnum, const HostTensor& whole) {
  const TensorLayout& l = s.output_layouts[0];
  HostTensor out(l.slice_shape(), whole.dtype());
  kernels::slice(whole, s.tensor_axis, l.slice_begin(pnum)[s.tensor_axis], out);
  return out;
}

int64_t group_size(const MeshShape& mesh, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.dims()[a].size;
  return n;
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

}  // namespace

void run_core(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* fetched) {
  std::vector<HostTensor> slots(program.num_slots);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    try {
      switch (s.kind) {
        case Step::Kind::kCompute: {
          std::vector<HostTensor> outs = compute(s, pnum, slots, state);
          for (size_t k = 0; k < outs.size(); ++k) slots[s.output_slots[k]] = std::move(outs[k]);
          break;
        }
        case Step::Kind::kSplit:
          slots[s.output_slots[0]] = split_piece(s, pnum, slots[s.input_slots[0]]);
          break;
        case Step::Kind::kAllgather: {
          const HostTensor& in = slots[s.input_slots[0]];
          const int64_t n = group_size(program.mesh, s.mesh_axes);
          HostTensor blocks(Shape({{"__blocks__", n * in.num_elements()}}), in.dtype());
          MTF_CHECK(transport != nullptr || n == 1);
          if (n == 1) {
            slots[s.output_slots[0]] = in;
            break;
          }
          allgather(*transport, Group::along_axes(program.mesh, pnum, s.mesh_axes), in.raw_data(),
                    blocks.raw_data(), in.num_elements(), in.dtype(), i);
          slots[s.output_slots[0]] = concat_gathered(blocks, n, in.shape(), s.tensor_axis);
          break;
        }
        case Step::Kind::kAllreduce: {
          HostTensor& x = slots[s.input_slots[0]];
          if (group_size(program.mesh, s.mesh_axes) == 1) break;
          MTF_CHECK(transport != nullptr);
          allreduce_over_axes(*transport, program.mesh, pnum, s.mesh_axes, x.raw_data(),
                              x.num_elements(), x.dtype(), s.reduce_op, i);
          break;
        }
      }
    } catch (const Error& e) {
      rethrow_in_op(*s.op, e);
    }
    for (int slot : s.free_after) slots[slot] = HostTensor();
  }
  fetched->clear();
  for (int slot : program.fetch_slots) fetched->push_back(slots[slot]);
}

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
