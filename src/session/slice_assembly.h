// slice_assembly.h — whole tensors from processors' slices, as a Session's
// fetches and variable values are returned. In a multi-process job this
// process holds one processor's slice; the others arrive by an allgather
// over the job, so every rank must assemble the same tensors in the same
// order. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/host_tensor.h"
#include "mtf/layout.h"
#include "mtf/transport.h"

namespace mtf::detail {

class SliceAssembler {
 public:
  // `process_transport`: the job's transport, or null in a single process.
  SliceAssembler(MeshShape mesh, Transport* process_transport)
      : mesh_(std::move(mesh)), transport_(process_transport) {}

  // The whole tensor of `layout` from `slices` (one per processor; in a job,
  // only this rank's is set). Replicated pieces come from the first
  // processor holding them. `what` names the tensor in the gather's call.
  HostTensor assemble(const TensorLayout& layout, std::vector<HostTensor> slices,
                      const std::string& what);

 private:
  void gather_slices(std::vector<HostTensor>& slices, const std::string& what);

  const MeshShape mesh_;
  Transport* const transport_;
  uint64_t gathers_ = 0;  // index of the next gather in TagSpace::kSessionGather
};

}  // namespace mtf::detail
