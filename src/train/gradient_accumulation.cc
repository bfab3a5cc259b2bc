#include "mtf/gradient_accumulation.h"

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "mtf/ops.h"
#include "mtf/variables.h"

namespace mtf {

GradientAccumulation::GradientAccumulation(Optimizer& optimizer, const Tensor& loss,
                                           int64_t microbatches)
    : microbatches_(microbatches) {
  if (microbatches < 1) {
    throw ValueError(detail::str_cat("gradient accumulation: ", microbatches,
                                     " microbatches; give 1 (no accumulation) or more"));
  }
  if (microbatches == 1) {
    accumulate_ = optimizer.minimize(loss);
    return;
  }
  const auto& vars = loss.graph().trainable_variables();
  if (vars.empty()) throw ValueError("gradient accumulation: the graph has no trainable variables");
  const std::vector<Tensor> grads = gradients({loss}, vars);
  std::vector<Tensor> means(vars.size());
  std::vector<Operation*> zero;
  const float scale = 1.0f / static_cast<float>(microbatches);
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& var = vars[i];
    const Tensor buffer = get_variable(var.mesh(), var.op().name() + "/accumulated_gradient",
                                       var.shape(), Initializer::zeros(), float32, false);
    const Tensor g = grads[i].dtype() == float32 ? grads[i] : cast(grads[i], float32);
    accumulate_.push_back(assign_add(buffer, g));
    // The update reads the buffers as the run starts; zeroing them in the
    // same run takes effect after (assignments commit at the run's end).
    means[i] = var.dtype() == float32 ? buffer * scale : cast(buffer * scale, var.dtype());
    zero.push_back(assign(buffer, zeros(buffer.mesh(), buffer.shape())));
  }
  apply_ = optimizer.apply_grads(means, vars);
  apply_.insert(apply_.end(), zero.begin(), zero.end());
}

}  // namespace mtf
