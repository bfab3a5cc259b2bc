// mtf/gradient_accumulation.h — a batch trained as N microbatches (Mesh
// TensorFlow's serialize_training_step): each microbatch's gradients are
// added into buffers laid out like the variables, and the optimizer then
// updates once with their mean. Activations are those of one microbatch, so
// their memory falls about N-fold; the update equals the whole batch's to
// float rounding when the loss is a mean over equal microbatches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/graph.h"
#include "mtf/optimizers.h"

namespace mtf {

class GradientAccumulation {
 public:
  // `loss`: one microbatch's mean loss (the graph built at the microbatch's
  // size). With microbatches == 1 accumulate_ops() are the optimizer's
  // minimize(loss) and apply_ops() is empty: the plain step. Otherwise each
  // trainable variable V gets a float32 buffer "V/accumulated_gradient"
  // (non-trainable, V's shape, so laid out like V). ValueError for
  // microbatches < 1.
  //
  // `weight` (optional): a float32 scalar of the part, e.g. its non-padding
  // tokens, when `loss` is a mean weighted by it (a token mean). Each part's
  // gradient then enters times its weight and the update divides by the
  // summed weights — the whole batch's weighted mean exactly, however the
  // weight falls between the parts (a buffer "accumulated_weight" holds the
  // sum). Without it every part counts the same.
  GradientAccumulation(Optimizer& optimizer, const Tensor& loss, int64_t microbatches,
                       const Tensor& weight = Tensor());

  // Run with each microbatch's feeds in turn: adds its gradients to the
  // buffers (the plain training step when microbatches == 1).
  const std::vector<Operation*>& accumulate_ops() const { return accumulate_; }
  // Run once after the last microbatch, without feeds: the optimizer's
  // update with the buffers' mean (clipped as the optimizer clips), and the
  // buffers back to zero.
  const std::vector<Operation*>& apply_ops() const { return apply_; }
  int64_t microbatches() const { return microbatches_; }

 private:
  int64_t microbatches_;
  std::vector<Operation*> accumulate_, apply_;
};

// Whether the variable named `name` is a buffer GradientAccumulation makes
// ("V/accumulated_gradient", "accumulated_weight"). They are zero between
// steps, so checkpoints need not hold them (SaveOptions::skip) and a run
// may resume with another microbatch count (leave them out of
// RestoreOptions::only).
bool is_accumulation_buffer(const std::string& name);

}  // namespace mtf
