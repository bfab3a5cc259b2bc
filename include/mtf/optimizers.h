// mtf/optimizers.h — optimizers that turn gradients into assignment ops.
#pragma once

#include <string>
#include <vector>

#include "mtf/graph.h"

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

// var -= lr * grad
class SgdOptimizer : public Optimizer {
 public:
  explicit SgdOptimizer(float learning_rate) : lr_(learning_rate) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  float lr_;
};

// v = momentum * v + grad; var -= lr * v
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(float learning_rate, float momentum) : lr_(learning_rate), mom_(momentum) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  float lr_, mom_;
};

// Adam (Kingma & Ba) with bias correction; step count in a variable
// "<name>/step" so that it is checkpointed with the model.
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(float learning_rate, float beta1 = 0.9f, float beta2 = 0.999f,
                         float epsilon = 1e-8f, std::string name = "adam")
      : lr_(learning_rate), b1_(beta1), b2_(beta2), eps_(epsilon), name_(std::move(name)) {}
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables) override;

 private:
  float lr_, b1_, b2_, eps_;
  std::string name_;
};

}  // namespace mtf
