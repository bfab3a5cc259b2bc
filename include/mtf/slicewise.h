// mtf/slicewise.h — user-defined ops: a function of host tensors run on each
// processor's slices, as Mesh TensorFlow's slicewise / cwise, with an
// optional gradient built from graph ops; and custom_gradient, a gradient of
// the user's for any composition of graph ops.
//
// The function gets one HostTensor per input (this processor's slice, named
// dimensions with slice sizes; bfloat16 arrives widened to float32) and
// returns one per output, each of that output's slice shape and dtype
// (float32 for a bfloat16 output: the op rounds it). Dimensions named in
// splittable_dims may be split by the layout — the function must then give,
// slice by slice, the slices of what it gives on whole tensors (true of
// elementwise functions along every dimension, of a reduction along the
// dimensions it keeps). Every other dimension the op sees whole: inputs split
// along it are gathered first, outputs computed whole and then split. It may
// run on several processors' slices at once (from threads or fibers), so it
// must be safe to call concurrently, and it runs again on every step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mtf/graph.h"
#include "mtf/host_tensor.h"

namespace mtf {

using SliceFunction = std::function<std::vector<HostTensor>(const std::vector<HostTensor>&)>;

// What a gradient function gets: the op's inputs and outputs.
struct SlicewiseCall {
  std::vector<Tensor> inputs, outputs;
};
// Gradients with respect to each input (an invalid Tensor where none), from
// the gradients of each output (invalid where none flows), built from graph
// ops — Mesh TensorFlow's grad_function(op, *dys).
using SliceGradient =
    std::function<std::vector<Tensor>(const SlicewiseCall& op, const std::vector<Tensor>& dys)>;

struct SlicewiseOptions {
  std::vector<Shape> output_shapes;  // empty: one output of the first input's shape
  std::vector<DType> output_dtypes;  // empty: the first input's dtype for each output
  // Names of the dimensions the layout may split (others are whole).
  std::vector<std::string> splittable_dims;
  // None: taking a gradient through the op is a ValueError, unless
  // no_gradient says none flows (Mesh TensorFlow's grad_function=0).
  SliceGradient gradient;
  bool no_gradient = false;
  // The cost the profile, the auto-layout and the simulator count: this
  // many floating-point operations per output element.
  double flops_per_element = 1.0;
  std::string name = "slicewise";
};

// fn on the slices of `inputs` (at least one, on one mesh): the op's outputs.
// ValueError for mismatched option lengths, an unknown splittable dimension
// or no inputs; at run time, for a function that returns the wrong number of
// tensors or a tensor of the wrong shape or dtype (naming the op).
std::vector<Tensor> slicewise(SliceFunction fn, const std::vector<Tensor>& inputs,
                              SlicewiseOptions options = {});

// An elementwise fn of same-shaped inputs (Mesh TensorFlow's cwise): every
// dimension splittable, one output of the first input's shape and `dtype`
// (the first input's when unset).
Tensor cwise(SliceFunction fn, const std::vector<Tensor>& inputs, SliceGradient gradient = {},
             const std::string& name = "cwise", std::optional<DType> dtype = std::nullopt);

// fn(inputs) — any graph ops — whose gradient with respect to `inputs` is
// gradient(op, dys) instead of the gradient through fn's ops (Mesh
// TensorFlow's custom_gradient): the backward pass keeps only what gradient
// reads. fn's ops see the inputs through stop_gradient, so a tensor fn
// reads that is not among `inputs` (a variable it reads) gets no gradient
// through fn: pass it as an input, or use the form below. ValueError when
// fn returns nothing, or gradient returns the wrong count or shapes.
using CustomGradientFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
std::vector<Tensor> custom_gradient(const CustomGradientFn& fn, const SliceGradient& gradient,
                                    const std::vector<Tensor>& inputs);

// What Mesh TensorFlow's grad_fn gets: the explicit inputs; all inputs
// (the explicit ones, then every tensor made outside fn that fn's ops read,
// in the order they first read it — variables among them); fn's operations;
// its outputs; and the gradients of those outputs (invalid where none).
struct CustomGradientCall {
  std::vector<Tensor> explicit_inputs, all_inputs;
  std::vector<Operation*> forward_operations;
  std::vector<Tensor> outputs, output_grads;
};
// Gradients with respect to all_inputs (invalid where none; as many as
// all_inputs, or as explicit_inputs when the others get none).
using AllInputsGradient = std::function<std::vector<Tensor>(const CustomGradientCall&)>;
// custom_gradient with Mesh TensorFlow's grad_fn: tensors fn reads besides
// `inputs` get the gradient grad_fn gives them.
std::vector<Tensor> custom_gradient(const CustomGradientFn& fn, const AllInputsGradient& gradient,
                                    const std::vector<Tensor>& inputs);

}  // namespace mtf
