#include "simd/simd_executor.h"

#include <cstring>

#include "collectives/tags.h"
#include "core/check.h"
#include "exec/step_dispatch.h"
#include "exec/step_runner.h"
#include "kernels/kernels.h"
#include "mtf/collectives.h"

namespace mtf {

using exec::concat_gathered;
using exec::rethrow_in_op;
using exec::split_piece;

namespace {

// One processor's steps: kernels on its slots and collectives over its
// transport. A dry run (slots == nullptr) runs no kernels and makes the same
// collective calls with sizes only, on a transport that carries no data.
class CoreBackend : public exec::StepBackend {
 public:
  CoreBackend(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* slots)
      : program_(program), pnum_(pnum), transport_(transport), state_(state), slots_(slots) {}
  void set_index(size_t i) { tag_ = collectives::tag_in(collectives::TagSpace::kProgramStep, i); }

  void compute(const Step& s) override {
    if (!slots_) return;
    std::vector<HostTensor> outs = exec::compute(s, pnum_, *slots_, state_);
    for (size_t k = 0; k < outs.size(); ++k) (*slots_)[s.output_slots[k]] = std::move(outs[k]);
  }
  void split(const Step& s) override {
    if (!slots_) return;
    (*slots_)[s.output_slots[0]] = split_piece(s, pnum_, (*slots_)[s.input_slots[0]]);
  }
  void pass_through(const Step& s) override {
    if (slots_) (*slots_)[s.output_slots[0]] = (*slots_)[s.input_slots[0]];
  }
  void allgather(const Step& s, int64_t n) override {
    const int in = s.input_slots[0];
    const Group g = Group::along_axes(program_.mesh, pnum_, s.collective.mesh_axes);
    const int64_t count = slice_elements(in);
    begin(s, "allgather", in);
    if (!slots_) {
      mtf::allgather(*transport_, g, nullptr, nullptr, count, program_.slot_dtypes[in], tag_);
      return;
    }
    const HostTensor& x = (*slots_)[in];
    HostTensor blocks(Shape({{"__blocks__", n * count}}), x.dtype());
    mtf::allgather(*transport_, g, x.raw_data(), blocks.raw_data(), count, x.dtype(), tag_);
    (*slots_)[s.output_slots[0]] = concat_gathered(blocks, n, x.shape(), s.collective.tensor_axis);
  }
  void alltoall(const Step& s, int64_t n) override {
    const int in = s.input_slots[0];
    const Group g = Group::along_axes(program_.mesh, pnum_, s.collective.mesh_axes);
    const int64_t block = slice_elements(in) / n;
    begin(s, "alltoall", in);
    if (!slots_) {
      mtf::alltoall(*transport_, g, nullptr, nullptr, block, program_.slot_dtypes[in], tag_);
      return;
    }
    // Block q of the split axis goes to position q; the block from position
    // q is its part of the axis being gathered.
    const HostTensor& x = (*slots_)[in];
    const int64_t b = x.shape()[s.collective.tensor_axis].size / n;
    const Shape part_shape = x.shape().resize(x.shape()[s.collective.tensor_axis].name, b);
    HostTensor send(Shape({{"__blocks__", n * block}}), x.dtype());
    HostTensor recv(Shape({{"__blocks__", n * block}}), x.dtype());
    const size_t block_bytes = static_cast<size_t>(block) * dtype_size(x.dtype());
    for (int64_t q = 0; q < n; ++q) {
      HostTensor part(part_shape, x.dtype());
      kernels::slice(x, s.collective.tensor_axis, q * b, part);
      std::memcpy(static_cast<char*>(send.raw_data()) + q * block_bytes, part.raw_data(),
                  block_bytes);
    }
    mtf::alltoall(*transport_, g, send.raw_data(), recv.raw_data(), block, x.dtype(), tag_);
    (*slots_)[s.output_slots[0]] = concat_gathered(recv, n, part_shape, s.collective.gather_axis);
  }
  void halo(const Step& s) override {
    const int in = s.input_slots[0];
    const Group g = Group::along_axes(program_.mesh, pnum_, s.collective.mesh_axes);
    const StepWindow& w = s.windows.at(0);
    const Shape& slice = program_.slot_layouts[in].slice_shape();
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < slice.ndims(); ++i) {
      if (i < w.tensor_axis) outer *= slice[i].size;
      if (i > w.tensor_axis) inner *= slice[i].size;
    }
    begin(s, "halo", in);
    if (!slots_) {
      mtf::halo_exchange(*transport_, g, nullptr, nullptr, outer, inner, program_.slot_dtypes[in],
                         w.rows, tag_);
      return;
    }
    const HostTensor& x = (*slots_)[in];
    HostTensor out(s.output_layouts[0].slice_shape(), x.dtype());
    mtf::halo_exchange(*transport_, g, x.raw_data(), out.raw_data(), outer, inner, x.dtype(),
                       w.rows, tag_);
    (*slots_)[s.output_slots[0]] = std::move(out);
  }
  void allreduce(const Step& s, int64_t) override {
    const int in = s.input_slots[0];
    begin(s, "allreduce", in);
    void* data = slots_ ? (*slots_)[in].raw_data() : nullptr;
    mtf::allreduce_over_axes(*transport_, program_.mesh, pnum_, s.collective.mesh_axes, data,
                             slice_elements(in), program_.slot_dtypes[in], s.collective.reduce_op,
                             tag_);
  }

 private:
  int64_t slice_elements(int slot) const {
    return program_.slot_layouts[slot].slice_shape().num_elements();
  }
  // Numbers the collective call on the transport (so diverging ranks are
  // named) and checks the transport suits the run.
  void begin(const Step& s, const char* kind, int slot) {
    MTF_CHECK(transport_ != nullptr && (slots_ || !transport_->carries_data()));
    transport_->begin_collective({0, kind, s.op->name(), program_.slot_bytes(slot)});
  }

  const Program& program_;
  const int64_t pnum_;
  Transport* const transport_;
  RunState& state_;
  std::vector<HostTensor>* const slots_;
  uint64_t tag_ = 0;
};

}  // namespace

void run_core(const Program& program, int64_t pnum, Transport* transport, RunState& state,
              std::vector<HostTensor>* fetched, StepHooks* hooks) {
  const bool dry = hooks && hooks->dry();
  std::vector<HostTensor> slots(dry ? 0 : program.num_slots);
  CoreBackend backend(program, pnum, transport, state, dry ? nullptr : &slots);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    if (hooks) hooks->before_step(s, i);
    backend.set_index(i);
    try {
      exec::dispatch_step(program.mesh, s, backend);
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
