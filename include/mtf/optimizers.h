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
  // its variable. Creates slot variables ("<var>/<slot>") on first use. With
  // a clip norm set, the gradients are first clipped together
  // (clip_by_global_norm below).
  std::vector<Operation*> apply_grads(const std::vector<Tensor>& grads,
                                      const std::vector<Tensor>& variables);
  // gradients(loss, trainable variables) followed by apply_grads.
  std::vector<Operation*> minimize(const Tensor& loss);
  // Clip the gradients to global norm clip_norm before every update (0, the
  // default: do not). Throws ValueError on a negative or non-finite norm.
  void set_clip_norm(float clip_norm);
  float clip_norm() const { return clip_norm_; }
  // The global norm of the gradients the last apply_grads took, before
  // clipping: a float32 scalar to fetch beside the loss (made on first call
  // when not clipping). Throws ValueError before any apply_grads.
  Tensor gradient_norm();

 protected:
  // The optimizer's own update of each variable by its (clipped) gradient.
  virtual std::vector<Operation*> update(const std::vector<Tensor>& grads,
                                         const std::vector<Tensor>& variables) = 0;

 private:
  float clip_norm_ = 0;
  std::vector<Tensor> last_grads_;
  Tensor gradient_norm_;
};

// Mesh TensorFlow's clip_by_global_norm: every gradient times
// clip_norm / max(global_norm(grads), clip_norm), so that their global norm
// is at most clip_norm (invalid gradients stay invalid). *norm, when given,
// receives the norm before clipping.
std::vector<Tensor> clip_by_global_norm(const std::vector<Tensor>& grads, float clip_norm,
                                        Tensor* norm = nullptr);

// Every optimizer takes a LearningRate (mtf/learning_rate.h): a float, or a
// schedule evaluated in the graph at the optimizer's step, which it counts
// in the variable "<name>/step" (saved in checkpoints). SGD and momentum
// with a constant rate keep no step variable.

// var -= lr * grad
class SgdOptimizer : public Optimizer {
 public:
  explicit SgdOptimizer(LearningRate learning_rate, std::string name = "sgd")
      : lr_(std::move(learning_rate)), name_(std::move(name)) {}

 protected:
  std::vector<Operation*> update(const std::vector<Tensor>& grads,
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

 protected:
  std::vector<Operation*> update(const std::vector<Tensor>& grads,
                                 const std::vector<Tensor>& variables) override;

 private:
  LearningRate lr_;
  float mom_;
  std::string name_;
};

// Adam (Kingma & Ba): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// var -= lr_t m / (sqrt(v) + epsilon) with lr_t = lr sqrt(1 - b2^t) /
// (1 - b1^t) when bias_correction (else lr_t = lr), and, with a weight
// decay rate, the decoupled decay var -= lr * weight_decay_rate * var on
// every variable whose name no exclude_from_weight_decay pattern (an
// ECMAScript regular expression, searched in the name) matches. Slots are
// "<var>/adam_m" and "<var>/adam_v".
struct AdamOptions {
  LearningRate learning_rate = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  bool bias_correction = true;
  float weight_decay_rate = 0.0f;
  std::vector<std::string> exclude_from_weight_decay;
  std::string name = "adam";
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(AdamOptions options) : o_(std::move(options)) {}
  explicit AdamOptimizer(LearningRate learning_rate, float beta1 = 0.9f, float beta2 = 0.999f,
                         float epsilon = 1e-8f, std::string name = "adam");

 protected:
  std::vector<Operation*> update(const std::vector<Tensor>& grads,
                                 const std::vector<Tensor>& variables) override;

 private:
  AdamOptions o_;
};

// Mesh TensorFlow's AdamWeightDecayOptimizer (BERT's AdamW): Adam without
// bias correction, epsilon 1e-6, decoupled weight decay. Norm scales and
// biases are usually excluded, e.g. {"/scale$", "/bias$"} for mtf's layers.
class AdamWeightDecayOptimizer : public AdamOptimizer {
 public:
  AdamWeightDecayOptimizer(LearningRate learning_rate, float weight_decay_rate, float beta1 = 0.9f,
                           float beta2 = 0.999f, float epsilon = 1e-6f,
                           std::vector<std::string> exclude_from_weight_decay = {},
                           std::string name = "adamw");
};

// Adafactor (Shazeer & Stern, 2018) as Mesh TensorFlow's optimize.py has it:
// second moments factored into row and column means for variables whose two
// largest dimensions both have at least min_dim_size_to_factor elements (one
// full accumulator otherwise), updates clipped to RMS clipping_threshold,
// scaled by max(RMS(var), epsilon2) when multiply_by_parameter_scale (but
// for variables an exclude_from_parameter_scale pattern matches), learning
// rate "rsqrt(10000)" = min(0.01, 1/sqrt(step)) by default (times 0.05
// without parameter scaling; a constant 0 asks for the default), optional
// first moment (beta1 > 0). The second moments decay at decay_rate:
//   ""         1 - step^-decay_exponent (Mesh TensorFlow's default,
//              adafactor_decay_rate_pow(0.8)): 0 on the first step;
//   "pow(E)"   1 - step^-E;
//   "adam(B)"  B (1 - B^(step-1)) / (1 - B^step), Adam's bias-corrected
//              beta2 (adafactor_decay_rate_adam);
//   "0.999"    a constant in [0, 1).
// Slots are "<var>/adafactor_vr", "_vc", "_v", "_m"; the step count is the
// variable "<name>/step".
struct AdafactorOptions {
  bool multiply_by_parameter_scale = true;
  LearningRate learning_rate = 0.0f;  // constant 0: the default schedule above
  float decay_exponent = 0.8f;
  std::string decay_rate;  // "" : pow(decay_exponent)
  float beta1 = 0.0f;
  float clipping_threshold = 1.0f;  // 0: no clipping
  bool factored = true;
  float epsilon1 = 1e-30f;
  float epsilon2 = 1e-3f;
  int64_t min_dim_size_to_factor = 32;
  std::vector<std::string> exclude_from_parameter_scale;  // regular expressions
  std::string name = "adafactor";
  // The rate Adafactor applies: learning_rate, or for the constant 0 its own
  // schedule, "rsqrt(10000)" ("0.05*rsqrt(10000)" without parameter scale).
  LearningRate effective_learning_rate() const;
};

class AdafactorOptimizer : public Optimizer {
 public:
  explicit AdafactorOptimizer(AdafactorOptions options = {}) : o_(std::move(options)) {}
  // The two dimensions whose means the second moment keeps, or none.
  std::vector<Dimension> factored_dims(const Shape& shape) const;

 protected:
  std::vector<Operation*> update(const std::vector<Tensor>& grads,
                                 const std::vector<Tensor>& variables) override;

 private:
  AdafactorOptions o_;
};

}  // namespace mtf
