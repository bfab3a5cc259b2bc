// mtf/optimizers.h — optimizers that turn gradients into assignment ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/graph.h"
#include "mtf/learning_rate.h"

namespace mtf {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Update ops for each (gradient, variable) pair; an invalid gradient skips
  // its variable. Creates slot variables ("<var>/<slot>") on first use.
  virtual std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                              const std::vector<Tensor>& variables) = 0;
  // gradients(loss, trainable variables) followed by apply_grads.
  std::vector<Operation*> minimize(const Tensor& loss);
};

// Every optimizer takes a LearningRate (mtf/learning_rate.h): a float, or a
// schedule evaluated in the graph at the optimizer's step, which it counts
// in the variable "<name>/step" (saved in checkpoints). SGD and momentum
// with a constant rate keep no step variable.

// var -= lr * grad
class SgdOptimizer : public Optimizer {
 public:
  explicit SgdOptimizer(LearningRate learning_rate, std::string name = "sgd")
      : lr_(std::move(learning_rate)), name_(std::move(name)) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  LearningRate lr_;
  std::string name_;
};

// v = momentum * v + grad; var -= lr * v
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(LearningRate learning_rate, float momentum, std::string name = "momentum")
      : lr_(std::move(learning_rate)), mom_(momentum), name_(std::move(name)) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  LearningRate lr_;
  float mom_;
  std::string name_;
};

// Adam (Kingma & Ba) with bias correction.
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(LearningRate learning_rate, float beta1 = 0.9f, float beta2 = 0.999f,
                         float epsilon = 1e-8f, std::string name = "adam")
      : lr_(std::move(learning_rate)),
        b1_(beta1),
        b2_(beta2),
        eps_(epsilon),
        name_(std::move(name)) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  LearningRate lr_;
  float b1_, b2_, eps_;
  std::string name_;
};

// Adafactor (Shazeer & Stern, 2018) as Mesh TensorFlow's optimize.py has it:
// second moments factored into row and column means for variables whose two
// largest dimensions both have at least min_dim_size_to_factor elements (one
// full accumulator otherwise), decay 1 - (step+1)^-decay_exponent, updates
// clipped to RMS clipping_threshold, scaled by max(RMS(var), epsilon2) when
// multiply_by_parameter_scale, learning rate "rsqrt(10000)" = min(0.01,
// 1/sqrt(step)) by default (times 0.05 without parameter scaling; a
// constant 0 asks for the default), optional first moment
// (beta1 > 0). Slots are "<var>/adafactor_vr", "_vc", "_v", "_m"; the step
// count is the variable "<name>/step".
struct AdafactorOptions {
  bool multiply_by_parameter_scale = true;
  LearningRate learning_rate = 0.0f;  // constant 0: the default schedule above
  float decay_exponent = 0.8f;
  float beta1 = 0.0f;
  float clipping_threshold = 1.0f;  // 0: no clipping
  bool factored = true;
  float epsilon1 = 1e-30f;
  float epsilon2 = 1e-3f;
  int64_t min_dim_size_to_factor = 32;
  std::string name = "adafactor";
};

class AdafactorOptimizer : public Optimizer {
 public:
  explicit AdafactorOptimizer(AdafactorOptions options = {}) : o_(std::move(options)) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;
  // The two dimensions whose means the second moment keeps, or none.
  std::vector<Dimension> factored_dims(const Shape& shape) const;

 private:
  AdafactorOptions o_;
};

}  // namespace mtf
