// User-defined slice-wise ops (include/mtf/slicewise.h).
#include <algorithm>
#include <set>

#include "kernels/kernel_context.h"
#include "mtf/slicewise.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

void check_user_gradients(const Operation& op, const std::vector<Tensor>& g);

class SlicewiseOp : public Operation {
 public:
  SlicewiseOp(SliceFunction fn, const std::vector<Tensor>& inputs, SlicewiseOptions o)
      : Operation(inputs.at(0).mesh(), "slicewise", inputs, o.name),
        fn_(std::move(fn)),
        o_(std::move(o)) {
    for (size_t i = 0; i < o_.output_shapes.size(); ++i)
      add_output(o_.output_shapes[i], o_.output_dtypes[i]);
    std::set<std::string> names;
    for (const Tensor& t : inputs) {
      for (const Dimension& d : t.shape().dims()) names.insert(d.name);
    }
    for (const Shape& s : o_.output_shapes)
      for (const Dimension& d : s.dims()) names.insert(d.name);
    for (const std::string& n : names)
      if (std::find(o_.splittable_dims.begin(), o_.splittable_dims.end(), n) ==
          o_.splittable_dims.end())
        unsplittable_.push_back(n);
  }

  void compute(KernelContext& ctx) const override {
    std::vector<HostTensor> slices;
    for (int i = 0; i < ctx.num_inputs(); ++i) slices.push_back(ctx.input(i));
    std::vector<HostTensor> out = fn_(slices);
    if (out.size() != static_cast<size_t>(num_outputs())) {
      throw ValueError(detail::str_cat(attribution(), ": the function returned ", out.size(),
                                       " tensors for ", num_outputs(), " outputs"));
    }
    for (int i = 0; i < num_outputs(); ++i) {
      // What allocate_output would make: the slice shape, float32 for a
      // bfloat16 output while the op runs widened.
      const HostTensor& expected = ctx.allocate_output(i);
      if (!(out[i].shape() == expected.shape()) || out[i].dtype() != expected.dtype()) {
        throw ValueError(detail::str_cat(
            attribution(), ": output ", i, " of the function is ", out[i].shape().to_string(), " ",
            dtype_name(out[i].dtype()), "; this processor's slice of ", output(i).describe(),
            " is ", expected.shape().to_string(), " ", dtype_name(expected.dtype())));
      }
      ctx.set_output(i, std::move(out[i]));
    }
  }
  std::vector<std::string> unsplittable_dims() const override { return unsplittable_; }
  bool differentiable() const override {
    if (o_.no_gradient) return false;
    for (const Tensor& t : inputs())
      if (is_floating(t.dtype())) return true;
    return false;
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& dys) const override {
    if (!o_.gradient) {
      throw ValueError(attribution() +
                       " has no gradient: give slicewise a gradient function (or no_gradient "
                       "when none flows), or take the gradient around it with stop_gradient");
    }
    std::vector<Tensor> g = o_.gradient(SlicewiseCall{inputs(), outputs()}, dys);
    check_user_gradients(*this, g);
    return g;
  }
  double flops() const override {
    double elements = 0;
    for (const Tensor& t : outputs()) elements += static_cast<double>(t.shape().num_elements());
    return o_.flops_per_element * elements;
  }

 private:
  SliceFunction fn_;
  SlicewiseOptions o_;
  std::vector<std::string> unsplittable_;
};

// Checks a user's gradient function's result against the op's inputs.
void check_user_gradients(const Operation& op, const std::vector<Tensor>& g) {
  const std::vector<Tensor>& in = op.inputs();
  if (g.size() != in.size()) {
    throw ValueError(detail::str_cat(op.attribution(), ": its gradient function returned ",
                                     g.size(), " gradients for ", in.size(), " inputs"));
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i].valid() && !(g[i].shape() == in[i].shape())) {
      throw ValueError(detail::str_cat(op.attribution(), ": its gradient function's gradient ", i,
                                       " is ", g[i].describe(), ", not of input ", in[i].describe(),
                                       "'s shape"));
    }
  }
}

// custom_gradient's op: the inputs, then fn's outputs, which it hands on
// unchanged; its gradient is the user's for the inputs, none for the rest.
class CustomGradientOp : public Operation {
 public:
  CustomGradientOp(const std::vector<Tensor>& inputs, const std::vector<Tensor>& values,
                   SliceGradient gradient)
      : Operation(inputs.at(0).mesh(), "custom_gradient", concat(inputs, values), ""),
        n_inputs_(inputs.size()),
        gradient_(std::move(gradient)) {
    for (const Tensor& v : values) add_output(v.shape(), v.dtype());
  }
  void compute(KernelContext& ctx) const override {
    for (int i = 0; i < num_outputs(); ++i)
      ctx.set_output(i, ctx.input(static_cast<int>(n_inputs_) + i));
  }
  bool computes_bfloat16() const override { return true; }  // hands the values over
  bool reads_input(int input) const override { return input >= static_cast<int>(n_inputs_); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& dys) const override {
    const std::vector<Tensor> xs(inputs().begin(), inputs().begin() + n_inputs_);
    std::vector<Tensor> g = gradient_(SlicewiseCall{xs, outputs()}, dys);
    if (g.size() != n_inputs_) {
      throw ValueError(detail::str_cat(attribution(), ": its gradient function returned ", g.size(),
                                       " gradients for ", n_inputs_, " inputs"));
    }
    g.resize(inputs().size());  // none for fn's values
    check_user_gradients(*this, g);
    return g;
  }
  double flops() const override { return 0; }

 private:
  static std::vector<Tensor> concat(std::vector<Tensor> a, const std::vector<Tensor>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  size_t n_inputs_;
  SliceGradient gradient_;
};

// Fills the defaults and refuses what cannot run (see slicewise.h).
void complete_options(const std::vector<Tensor>& inputs, SlicewiseOptions& o) {
  const std::string who = "slicewise \"" + o.name + "\"";
  if (inputs.empty()) throw ValueError(who + ": needs at least one input tensor");
  if (o.output_shapes.empty())
    o.output_shapes.assign(std::max<size_t>(1, o.output_dtypes.size()), inputs[0].shape());
  if (o.output_dtypes.empty()) o.output_dtypes.assign(o.output_shapes.size(), inputs[0].dtype());
  if (o.output_dtypes.size() != o.output_shapes.size()) {
    throw ValueError(detail::str_cat(who, ": ", o.output_shapes.size(), " output shapes but ",
                                     o.output_dtypes.size(), " output dtypes"));
  }
  if (!(o.flops_per_element >= 0)) throw ValueError(who + ": flops_per_element must be >= 0");
  ops::check_consistent_sizes(who, inputs);
  for (const std::string& d : o.splittable_dims) {
    bool in_input = false;
    for (const Tensor& t : inputs) in_input = in_input || t.shape().index_of(d) >= 0;
    if (!in_input) {
      throw ValueError(who + ": splittable dimension \"" + d +
                       "\" is in no input (a processor could not know which part of it to make)");
    }
    for (const Shape& s : o.output_shapes) {
      if (s.index_of(d) < 0) {
        throw ValueError(who + ": splittable dimension \"" + d + "\" is missing from output " +
                         s.to_string() +
                         " (split, each processor would return a partial result; declare it "
                         "unsplittable)");
      }
    }
  }
}

}  // namespace

std::vector<Tensor> slicewise(SliceFunction fn, const std::vector<Tensor>& inputs,
                              SlicewiseOptions options) {
  if (!fn) throw ValueError("slicewise \"" + options.name + "\": no function given");
  complete_options(inputs, options);
  return inputs[0].graph().add<SlicewiseOp>(std::move(fn), inputs, std::move(options))->outputs();
}

Tensor cwise(SliceFunction fn, const std::vector<Tensor>& inputs, SliceGradient gradient,
             const std::string& name, std::optional<DType> dtype) {
  SlicewiseOptions o;
  o.name = name;
  o.gradient = std::move(gradient);
  if (!inputs.empty()) {
    for (const Dimension& d : inputs[0].shape().dims()) o.splittable_dims.push_back(d.name);
    o.output_dtypes = {dtype.value_or(inputs[0].dtype())};
  }
  return slicewise(std::move(fn), inputs, std::move(o))[0];
}

std::vector<Tensor> custom_gradient(const CustomGradientFn& fn, const SliceGradient& gradient,
                                    const std::vector<Tensor>& inputs) {
  if (inputs.empty()) throw ValueError("custom_gradient: needs at least one input tensor");
  if (!fn || !gradient) throw ValueError("custom_gradient: needs a function and a gradient");
  std::vector<Tensor> stopped;
  for (const Tensor& x : inputs) stopped.push_back(stop_gradient(x));
  const std::vector<Tensor> values = fn(stopped);
  if (values.empty()) throw ValueError("custom_gradient: the function returned no tensor");
  return inputs[0].graph().add<CustomGradientOp>(inputs, values, gradient)->outputs();
}

}  // namespace mtf
