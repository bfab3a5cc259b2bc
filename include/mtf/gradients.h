// mtf/gradients.h — reverse-mode automatic differentiation on the graph.
#pragma once

#include <vector>

#include "mtf/graph.h"

namespace mtf {

// d(sum of ys, each weighted by grad_ys)/d(xs), built as new graph ops.
// grad_ys defaults to ones. An x that no y depends on gets zeros of its shape.
// Throws ValueError when a path from xs to ys crosses an op that has no
// gradient and is not marked non-differentiable.
std::vector<Tensor> gradients(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                              const std::vector<Tensor>& grad_ys = {});

}  // namespace mtf
