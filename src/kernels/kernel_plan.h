// kernel_plan.h — what a kernel decides from slice shapes alone, made once
// per program step (the lowering knows every slice shape) instead of once
// per run. Each kernel that plans derives its own plan type.
#pragma once

namespace mtf::kernels {

struct KernelPlan {
  virtual ~KernelPlan() = default;
};

}  // namespace mtf::kernels
