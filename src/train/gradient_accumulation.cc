#include "mtf/gradient_accumulation.h"

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "mtf/ops.h"
#include "mtf/variables.h"

namespace mtf {

namespace {
constexpr const char* kGradientSuffix = "/accumulated_gradient";
constexpr const char* kWeightName = "accumulated_weight";
}  // namespace

bool is_accumulation_buffer(const std::string& name) {
  const std::string suffix = kGradientSuffix;
  return name == kWeightName ||
         (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

GradientAccumulation::GradientAccumulation(Optimizer& optimizer, const Tensor& loss,
                                           int64_t microbatches, const Tensor& weight)
    : microbatches_(microbatches) {
  if (weight.valid() && (weight.shape().ndims() != 0 || weight.dtype() != float32)) {
    throw ValueError("gradient accumulation: the weight must be a float32 scalar, not " +
                     weight.shape().to_string() + " " + dtype_name(weight.dtype()));
  }
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
  // The mean: the buffers over the parts, or over the summed weights.
  const float part = 1.0f / static_cast<float>(microbatches);
  Tensor scale;
  if (weight.valid()) {
    const Tensor total =
        get_variable(loss.mesh(), kWeightName, Shape(), Initializer::zeros(), float32, false);
    accumulate_.push_back(assign_add(total, weight));
    // All weights zero: the buffers are zero too, and so is the mean.
    scale = 1.0f / maximum(total, constant(loss.mesh(), 1e-30f));
    zero.push_back(assign(total, zeros(total.mesh(), total.shape())));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Tensor& var = vars[i];
    const Tensor buffer = get_variable(var.mesh(), var.op().name() + kGradientSuffix, var.shape(),
                                       Initializer::zeros(), float32, false);
    Tensor g = grads[i].dtype() == float32 ? grads[i] : cast(grads[i], float32);
    if (weight.valid()) g = g * weight;
    accumulate_.push_back(assign_add(buffer, g));
    // The update reads the buffers as the run starts; zeroing them in the
    // same run takes effect after (assignments commit at the run's end).
    const Tensor mean = scale.valid() ? buffer * scale : buffer * part;
    means[i] = var.dtype() == float32 ? mean : cast(mean, var.dtype());
    zero.push_back(assign(buffer, zeros(buffer.mesh(), buffer.shape())));
  }
  apply_ = optimizer.apply_grads(means, vars);
  apply_.insert(apply_.end(), zero.begin(), zero.end());
}

}  // namespace mtf
