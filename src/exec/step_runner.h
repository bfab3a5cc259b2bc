// step_runner.h — what every executor does the same way: run one compute
// step for a processor, take a processor's piece of a whole slot, turn
// gathered blocks into a concatenated slice, and rethrow a step's error with
// its op named. Used by the SIMD and placement executors.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/kernel_context.h"
#include "lowering/program.h"
#include "mtf/errors.h"

namespace mtf::exec {

// Rethrows e as the same mtf error type, prefixed with the op.
[[noreturn]] void rethrow_in_op(const Operation& op, const Error& e);
// Runs compute step s for processor pnum; returns its outputs. A fused
// step's output may take over the buffer of a donor input (Step::fusion.donors)
// that no other tensor shares; that slot is freed after the step anyway.
std::vector<HostTensor> compute(const Step& s, int64_t pnum, const std::vector<HostTensor>& slots,
                                RunState& state);
// Processor pnum's piece of `whole` for split step s.
HostTensor split_piece(const Step& s, int64_t pnum, const HostTensor& whole);
// Processor pnum's window for halo step s, assembled from the blocks of the
// processors along its mesh axis: block(position) is that position's slice
// (in memory: the placement executor).
HostTensor halo_window(const Step& s, int64_t pnum, const MeshShape& mesh,
                       const std::function<const HostTensor&(int position)>& block);
// `blocks` holds n slices back to back ([n, slice...]); returns them
// concatenated along tensor axis `axis` of the slice.
HostTensor concat_gathered(const HostTensor& blocks, int64_t n, const Shape& slice, int axis);

}  // namespace mtf::exec
