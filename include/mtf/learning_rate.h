// mtf/learning_rate.h — learning rates as functions of the training step.
//
// A LearningRate is built into the graph as a scalar computed from the
// optimizer's step variable ("<name>/step", saved in checkpoints, the same on
// every processor), so a restored run continues its schedule where it
// stopped; `at(step)` evaluates the same formula on the host (for printing
// and summaries). Steps count from 1: the first update is step 1.
//
// Written as text (flags, Python) or built in code, a schedule is a product
// of factors, as Mesh TensorFlow's product_learning_rate, optionally in
// phases:
//   0.01                   a constant
//   warmup(S)              min(1, step / S): linear warm-up over S steps
//   rsqrt(S)               1 / sqrt(max(step, S)): inverse square root decay,
//                          flat for the first S steps (Mesh TensorFlow's
//                          truncated_rsqrt; Adafactor's default is
//                          rsqrt(10000) = min(0.01, 1/sqrt(step)))
//   linear_decay(A, B)     1 up to step A, falling linearly to 0 at step B
//   cosine(S)              0.5 (1 + cos(pi min(step, S) / S)): half a cosine
//   cosine(S, F)           the same from 1 down to F instead of 0
//   piecewise(V0, S1, V1, S2, V2, ...)
//                          V0 before step S1, V1 from S1 (before S2), ...
// Factors multiply with '*'; "P until N then Q" runs P for steps 1..N and
// then Q with its step counted from N (step - N), so Q's own warm-up starts
// again. Examples: "warmup(1000)*rsqrt(1000)" (the Transformer's warm-up
// then decay: up to 1/sqrt(1000) = 0.032 at step 1000, then 1/sqrt(step)),
// "0.001*cosine(50000)", "piecewise(0.1, 1000, 0.01, 2000, 0.001)",
// "0.01 until 500 then 0.001".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/graph.h"

namespace mtf {

class LearningRate {
 public:
  // A constant rate (implicit, so a float is accepted wherever a
  // LearningRate is).
  LearningRate(float value = 0.0f);  // NOLINT(google-explicit-constructor)
  // Parses the text form above; throws ValueError naming the position and
  // what was expected. Also accepted implicitly from strings.
  LearningRate(const std::string& text);  // NOLINT(google-explicit-constructor)
  LearningRate(const char* text) : LearningRate(std::string(text)) {}  // NOLINT

  bool is_constant() const;
  // The constant's value (is_constant() only).
  float constant_value() const;
  // The rate at a step (>= 1), on the host, in double.
  double at(int64_t step) const;
  // The rate as a float32 scalar on step's mesh; `step` is a float32 scalar
  // holding the (1-based) step.
  Tensor build(const Tensor& step) const;
  // The canonical text form (parses back to the same schedule).
  std::string str() const;

  struct Factor {
    enum class Kind { kConstant, kWarmup, kRsqrt, kLinearDecay, kCosine, kPiecewise };
    Kind kind = Kind::kConstant;
    std::vector<double> args;
  };
  struct Phase {
    std::vector<Factor> factors;  // multiplied
    int64_t until = 0;            // last step of this phase (0: the last phase)
  };
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  std::vector<Phase> phases_;
};

}  // namespace mtf
