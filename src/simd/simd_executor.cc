#include "simd/simd_executor.h"

#include "core/check.h"
#include "exec/step_runner.h"
#include "mtf/collectives.h"

namespace mtf {

using exec::compute;
using exec::concat_gathered;
using exec::group_size;
using exec::rethrow_in_op;
using exec::split_piece;

namespace {

void run_step(const Program& program, const Step& s, size_t i, int64_t pnum, Transport* transport,
              RunState& state, std::vector<HostTensor>& slots) {
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
      MTF_CHECK(transport != nullptr || n == 1);
      if (n == 1) {
        slots[s.output_slots[0]] = in;
        break;
      }
      HostTensor blocks(Shape({{"__blocks__", n * in.num_elements()}}), in.dtype());
      transport->begin_collective(
          {0, "allgather", s.op->name(), static_cast<int64_t>(in.num_bytes())});
      allgather(*transport, Group::along_axes(program.mesh, pnum, s.mesh_axes), in.raw_data(),
                blocks.raw_data(), in.num_elements(), in.dtype(), i);
      slots[s.output_slots[0]] = concat_gathered(blocks, n, in.shape(), s.tensor_axis);
      break;
    }
    case Step::Kind::kAllreduce: {
      HostTensor& x = slots[s.input_slots[0]];
      if (group_size(program.mesh, s.mesh_axes) == 1) break;
      MTF_CHECK(transport != nullptr);
      transport->begin_collective(
          {0, "allreduce", s.op->name(), static_cast<int64_t>(x.num_bytes())});
      allreduce_over_axes(*transport, program.mesh, pnum, s.mesh_axes, x.raw_data(),
                          x.num_elements(), x.dtype(), s.reduce_op, i);
      break;
    }
  }
}

// A dry run's collectives: the same calls with sizes only.
void run_dry_collective(const Program& program, const Step& s, size_t i, int64_t pnum,
                        Transport* transport) {
  const int64_t n = group_size(program.mesh, s.mesh_axes);
  if (n == 1 || s.kind == Step::Kind::kCompute || s.kind == Step::Kind::kSplit) return;
  MTF_CHECK(transport != nullptr && !transport->carries_data());
  const int in = s.input_slots[0];
  const int64_t count = program.slot_layouts[in].slice_shape().num_elements();
  const DType dtype = program.slot_dtypes[in];
  transport->begin_collective({0, s.kind == Step::Kind::kAllgather ? "allgather" : "allreduce",
                               s.op->name(), count * static_cast<int64_t>(dtype_size(dtype))});
  if (s.kind == Step::Kind::kAllgather) {
    allgather(*transport, Group::along_axes(program.mesh, pnum, s.mesh_axes), nullptr, nullptr,
              count, dtype, i);
  } else {
    allreduce_over_axes(*transport, program.mesh, pnum, s.mesh_axes, nullptr, count, dtype,
                        s.reduce_op, i);
  }
}

}  // namespace

void run_core(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* fetched, StepHooks* hooks) {
  const bool dry = hooks && hooks->dry();
  std::vector<HostTensor> slots(dry ? 0 : program.num_slots);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (hooks) hooks->before_step(s, i);
    try {
      if (dry) {
        run_dry_collective(program, s, i, pnum, transport);
      } else {
        run_step(program, s, i, pnum, transport, state, slots);
      }
    } catch (const Error& e) {
      rethrow_in_op(*s.op, e);
    }
    if (hooks) hooks->after_step(s, i);
    if (!dry)
      for (int slot : s.free_after) slots[slot] = HostTensor();
  }
  fetched->clear();
  if (dry) {
    fetched->resize(program.fetch_slots.size());
    return;
  }
  for (int slot : program.fetch_slots) fetched->push_back(slots[slot]);
}

}  // namespace mtf
