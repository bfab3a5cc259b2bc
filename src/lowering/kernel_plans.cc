#include "lowering/kernel_plans.h"

#include "ops/op_util.h"

namespace mtf {

int plan_kernels(Program& program, bool reproducible) {
  int planned = 0;
  for (Step& s : program.steps) {
    if (s.kind != Step::Kind::kCompute || s.fusion.expr) continue;
    std::vector<Shape> in, out;
    for (const TensorLayout& l : s.input_layouts) in.push_back(l.slice_shape());
    for (const TensorLayout& l : s.output_layouts) out.push_back(l.slice_shape());
    if (s.update.einsum) {  // the einsum's inputs, into the variable's shape
      out = {in[0]};
      in.erase(in.begin());
      s.kernel_plan = ops::plan_kernel(*s.update.einsum, in, out, reproducible);
    } else {
      s.kernel_plan = ops::plan_kernel(*s.op, in, out, reproducible);
    }
    planned += s.kernel_plan != nullptr;
  }
  return planned;
}

}  // namespace mtf
