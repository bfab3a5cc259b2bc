// The step count an optimizer keeps ("<name>/step", a float32 scalar variable
// saved with the model) and its learning rate at the step being taken.
#pragma once

#include <string>

#include "mtf/graph.h"
#include "mtf/learning_rate.h"

namespace mtf::train {

struct StepRate {
  Tensor step;       // the step being taken, 1-based (the variable + 1)
  Tensor rate;       // the learning rate at `step`
  Operation* count;  // the assignment that stores `step` in the variable
};

StepRate step_rate(const Mesh& mesh, const std::string& optimizer_name, const LearningRate& lr);

}  // namespace mtf::train
