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

// custom_gradient's op: all of fn's inputs (the explicit ones, then those
// it read from outside), then fn's outputs, which it hands on unchanged; its
// gradient is the user's for the inputs, none for the rest.
class CustomGradientOp : public Operation {
 public:
  CustomGradientOp(CustomGradientCall call, AllInputsGradient gradient)
      : Operation(call.all_inputs.at(0).mesh(), "custom_gradient",
                  concat(call.all_inputs, call.outputs), ""),
        call_(std::move(call)),
        gradient_(std::move(gradient)) {
    for (const Tensor& v : call_.outputs) add_output(v.shape(), v.dtype());
  }
  void compute(KernelContext& ctx) const override {
    for (int i = 0; i < num_outputs(); ++i) ctx.set_output(i, ctx.input(n_inputs() + i));
  }
  bool computes_bfloat16() const override { return true; }  // hands the values over
  bool reads_input(int input) const override { return input >= n_inputs(); }
  std::vector<Tensor> gradient(const std::vector<Tensor>& dys) const override {
    CustomGradientCall call = call_;
    call.outputs = outputs();
    call.output_grads = dys;
    std::vector<Tensor> g = gradient_(call);
    const size_t n_explicit = call.explicit_inputs.size(), n_all = call.all_inputs.size();
    if (g.size() != n_all && g.size() != n_explicit) {
      throw ValueError(detail::str_cat(
          attribution(), ": its gradient function returned ", g.size(), " gradients for ",
          n_explicit, " inputs",
          n_all > n_explicit ? detail::str_cat(" (", n_all, " with the tensors fn read besides)")
                             : std::string()));
    }
    g.resize(inputs().size());  // none for fn's values (and unread inputs)
    check_user_gradients(*this, g);
    return g;
  }
  double flops() const override { return 0; }

 private:
  int n_inputs() const { return static_cast<int>(call_.all_inputs.size()); }
  static std::vector<Tensor> concat(std::vector<Tensor> a, const std::vector<Tensor>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  CustomGradientCall call_;  // without outputs and output_grads
  AllInputsGradient gradient_;
};

// Runs fn on `inputs` seen through stop_gradient and records what it made
// and what it read from outside (CustomGradientCall's fields).
CustomGradientCall trace_forward(const CustomGradientFn& fn, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) throw ValueError("custom_gradient: needs at least one input tensor");
  if (!fn) throw ValueError("custom_gradient: needs a function and a gradient");
  Graph& graph = inputs[0].graph();
  std::vector<Tensor> stopped;
  for (const Tensor& x : inputs) stopped.push_back(stop_gradient(x));
  const size_t before = graph.operations().size();
  CustomGradientCall call;
  call.explicit_inputs = inputs;
  call.all_inputs = inputs;
  call.outputs = fn(stopped);
  if (call.outputs.empty()) throw ValueError("custom_gradient: the function returned no tensor");
  std::set<const Operation*> made, seen;
  for (size_t i = before; i < graph.operations().size(); ++i) {
    call.forward_operations.push_back(graph.operations()[i].get());
    made.insert(graph.operations()[i].get());
  }
  for (const Tensor& s : stopped) seen.insert(&s.op());
  for (const Operation* op : call.forward_operations) {
    for (const Tensor& t : op->inputs()) {
      if (made.count(&t.op()) || seen.count(&t.op())) continue;
      bool known = false;
      for (const Tensor& a : call.all_inputs) known = known || a == t;
      if (!known) call.all_inputs.push_back(t);
    }
  }
  return call;
}

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

std::vector<Tensor> custom_gradient(const CustomGradientFn& fn, const AllInputsGradient& gradient,
                                    const std::vector<Tensor>& inputs) {
  if (!gradient) throw ValueError("custom_gradient: needs a function and a gradient");
  CustomGradientCall call = trace_forward(fn, inputs);
  return inputs[0].graph().add<CustomGradientOp>(std::move(call), gradient)->outputs();
}

std::vector<Tensor> custom_gradient(const CustomGradientFn& fn, const SliceGradient& gradient,
                                    const std::vector<Tensor>& inputs) {
  if (!gradient) throw ValueError("custom_gradient: needs a function and a gradient");
  return custom_gradient(
      fn, AllInputsGradient([gradient](const CustomGradientCall& call) {
        std::vector<Tensor> g =
            gradient(SlicewiseCall{call.explicit_inputs, call.outputs}, call.output_grads);
        if (g.size() != call.explicit_inputs.size()) {
          throw ValueError(detail::str_cat("custom_gradient: its gradient function returned ",
                                           g.size(), " gradients for ", call.explicit_inputs.size(),
                                           " inputs"));
        }
        g.resize(call.all_inputs.size());  // none for what fn read besides
        return g;
      }),
      inputs);
}

}  // namespace mtf
