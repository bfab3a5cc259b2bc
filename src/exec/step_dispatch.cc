#include "exec/step_dispatch.h"

#include "mtf/interrupt.h"

namespace mtf::exec {

int64_t group_size(const MeshShape& mesh, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.dims()[a].size;
  return n;
}

void dispatch_step(const MeshShape& mesh, const Step& s, StepBackend& backend) {
  // Every executor and the cost model pass here before each step, so a
  // request_interrupt() stops all of them between steps.
  check_interrupt("the run");
  switch (s.kind) {
    case Step::Kind::kCompute:
      backend.compute(s);
      return;
    case Step::Kind::kSplit:
      backend.split(s);
      return;
    case Step::Kind::kAllgather: {
      const int64_t n = group_size(mesh, s.collective.mesh_axes);
      if (n == 1) {
        backend.pass_through(s);
      } else {
        backend.allgather(s, n);
      }
      return;
    }
    case Step::Kind::kHalo:
      backend.halo(s);
      return;
    case Step::Kind::kAlltoall:
      backend.alltoall(s, group_size(mesh, s.collective.mesh_axes));
      return;
    case Step::Kind::kAllreduce: {
      const int64_t n = group_size(mesh, s.collective.mesh_axes);
      if (n > 1) backend.allreduce(s, n);
      return;
    }
  }
}

}  // namespace mtf::exec
