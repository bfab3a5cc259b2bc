// bind_slicewise.cc — mtf.slicewise, mtf.cwise and mtf.custom_gradient
// (mtf/slicewise.h): a NumPy function run on each processor's slices, a
// gradient as a Python function of graph tensors, with Mesh TensorFlow's
// call shapes.
#include <pybind11/numpy.h>

#include <memory>
#include <utility>

#include "array_convert.h"
#include "handles.h"

namespace mtf::python {
namespace {

// A Python object a C++ function keeps: released with the GIL held (the
// graph holding the function may die on any thread).
std::shared_ptr<py::object> keep(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// The slice of `logical` a processor's function returns: a dimension any
// input slice has is as long as there; the others are whole (they are not
// splittable).
Shape output_slice(const Shape& logical, const std::vector<HostTensor>& inputs) {
  std::vector<Dimension> dims;
  for (const Dimension& d : logical.dims()) {
    int64_t size = d.size;
    for (const HostTensor& t : inputs)
      if (t.shape().index_of(d.name) >= 0) size = t.shape().dims()[t.shape().index_of(d.name)].size;
    dims.push_back({d.name, size});
  }
  return Shape(dims);
}

// fn(*arrays) -> array or tuple of arrays, as a SliceFunction (bfloat16
// values cross as float32).
SliceFunction numpy_function(std::shared_ptr<py::object> fn, std::string name,
                             std::vector<Shape> shapes, std::vector<DType> dtypes) {
  return [fn, name, shapes, dtypes](const std::vector<HostTensor>& in) {
    py::gil_scoped_acquire gil;
    std::vector<HostTensor> out;
    try {
      py::tuple args(in.size());
      for (size_t i = 0; i < in.size(); ++i) args[i] = host_to_array(in[i]);
      py::object result = (*fn)(*args);
      py::tuple results = py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)
                              ? py::tuple(result)
                              : py::make_tuple(result);
      if (results.size() != shapes.size()) {
        throw ValueError("slicewise \"" + name + "\": the function returned " +
                         std::to_string(results.size()) + " arrays for " +
                         std::to_string(shapes.size()) + " outputs");
      }
      for (size_t k = 0; k < shapes.size(); ++k) {
        const DType dtype = dtypes[k] == bfloat16 ? float32 : dtypes[k];
        out.push_back(array_to_host(results[k], output_slice(shapes[k], in), dtype,
                                    "slicewise \"" + name + "\" output " + std::to_string(k)));
      }
    } catch (py::error_already_set& e) {
      throw ValueError("slicewise \"" + name + "\": the Python function raised " + e.what());
    }
    return out;
  };
}

// Tensors back to Python: the first alone, or a tuple of all.
py::object tensors_to_py(const std::vector<Tensor>& out, bool several) {
  if (!several) return py::cast(wrap(out.at(0)));
  py::tuple t(out.size());
  for (size_t i = 0; i < out.size(); ++i) t[i] = py::cast(wrap(out[i]));
  return t;
}

// grad_function(op, *dys) -> a list of tensors (None where none), as a
// SliceGradient; op has the inputs and outputs, as Mesh TensorFlow's.
SliceGradient python_gradient(std::shared_ptr<py::object> grad) {
  return [grad](const SlicewiseCall& call, const std::vector<Tensor>& dys) {
    py::gil_scoped_acquire gil;
    py::list inputs, outputs;
    for (const Tensor& t : call.inputs) inputs.append(wrap(t));
    for (const Tensor& t : call.outputs) outputs.append(wrap(t));
    py::object op = py::module_::import("types").attr("SimpleNamespace")(
        py::arg("inputs") = inputs, py::arg("outputs") = outputs);
    py::tuple args(dys.size() + 1);
    args[0] = op;
    for (size_t i = 0; i < dys.size(); ++i)
      args[i + 1] = dys[i].valid() ? py::cast(wrap(dys[i])) : py::none();
    std::vector<Tensor> grads;
    for (const py::handle& g : py::iterable((*grad)(*args)))
      grads.push_back(g.is_none() ? Tensor() : g.cast<PyTensor>().tensor);
    return grads;
  };
}

std::vector<std::string> names_of(const py::object& dims) {
  std::vector<std::string> names;
  if (dims.is_none()) return names;
  for (const py::handle& d : py::iterable(dims))
    names.push_back(py::isinstance<py::str>(d) ? d.cast<std::string>() : d.cast<Dimension>().name);
  return names;
}

py::object slicewise_py(const py::object& fn, const std::vector<Tensor>& xs,
                        const py::object& output_shape, const py::object& output_dtype,
                        const py::object& splittable_dims, const py::object& grad_function,
                        const std::optional<std::string>& name, double flops_per_element) {
  if (xs.empty()) throw ValueError("slicewise: needs at least one input tensor");
  SlicewiseOptions o;
  o.name = name.value_or("slicewise");
  o.flops_per_element = flops_per_element;
  const bool several = py::isinstance<py::list>(output_dtype);  // Mesh TensorFlow's rule
  const py::list dtypes = several ? py::list(output_dtype) : py::list(py::make_tuple(output_dtype));
  const py::list shapes = several && !output_shape.is_none()
                              ? py::list(output_shape)
                              : py::list(py::make_tuple(output_shape));
  if (shapes.size() != dtypes.size()) {
    throw ValueError("slicewise \"" + o.name + "\": " + std::to_string(shapes.size()) +
                     " output shapes but " + std::to_string(dtypes.size()) + " output dtypes");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    o.output_shapes.push_back(shapes[i].is_none() ? xs[0].shape() : shapes[i].cast<Shape>());
    o.output_dtypes.push_back(dtypes[i].is_none() ? xs[0].dtype() : dtypes[i].cast<DType>());
  }
  o.splittable_dims = names_of(splittable_dims);
  if (py::isinstance<py::int_>(grad_function) && grad_function.cast<int>() == 0) {
    o.no_gradient = true;  // Mesh TensorFlow's grad_function=0
  } else if (!grad_function.is_none()) {
    o.gradient = python_gradient(keep(grad_function));
  }
  SliceFunction f = numpy_function(keep(fn), o.name, o.output_shapes, o.output_dtypes);
  return tensors_to_py(slicewise(std::move(f), xs, std::move(o)), several);
}

// True when grad_fn takes Mesh TensorFlow's keyword arguments
// (output_grads, or **kwargs) rather than (op, *dys).
bool takes_mesh_tensorflow_arguments(const py::object& grad_fn) {
  try {
    const py::module_ inspect = py::module_::import("inspect");
    const py::object params = inspect.attr("signature")(grad_fn).attr("parameters");
    if (params.contains("output_grads")) return true;
    const py::object var_keyword = inspect.attr("Parameter").attr("VAR_KEYWORD");
    for (const py::handle& p : params.attr("values")())
      if (py::object(p.attr("kind")).equal(var_keyword)) return true;
  } catch (py::error_already_set&) {  // a builtin without a signature
  }
  return false;
}

py::list tensor_list(const std::vector<Tensor>& ts) {
  py::list l;
  for (const Tensor& t : ts) l.append(t.valid() ? py::cast(wrap(t)) : py::none());
  return l;
}

// grad_fn(explicit_inputs=, all_inputs=, forward_operations=, outputs=,
// output_grads=) -> gradients for all_inputs (None where none), as Mesh
// TensorFlow calls it.
AllInputsGradient python_all_inputs_gradient(std::shared_ptr<py::object> grad) {
  return [grad](const CustomGradientCall& call) {
    py::gil_scoped_acquire gil;
    py::list ops;
    for (Operation* op : call.forward_operations) ops.append(wrap(op));
    const py::object r =
        (*grad)(py::arg("explicit_inputs") = tensor_list(call.explicit_inputs),
                py::arg("all_inputs") = tensor_list(call.all_inputs),
                py::arg("forward_operations") = ops, py::arg("outputs") = tensor_list(call.outputs),
                py::arg("output_grads") = tensor_list(call.output_grads));
    std::vector<Tensor> grads;
    for (const py::handle& g : py::iterable(r))
      grads.push_back(g.is_none() ? Tensor() : g.cast<PyTensor>().tensor);
    return grads;
  };
}

// custom_gradient(fn, grad_fn, explicit_inputs): fn(*inputs) -> a tensor or a list;
// grad_fn in either form.
py::object custom_gradient_py(const py::object& fn, const py::object& grad_fn,
                              const std::vector<Tensor>& inputs) {
  bool several = false;
  const CustomGradientFn forward = [&](const std::vector<Tensor>& xs) {
    py::tuple args(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) args[i] = py::cast(wrap(xs[i]));
    py::object r = fn(*args);
    std::vector<Tensor> values;
    several = py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r);
    if (!several) return std::vector<Tensor>{r.cast<PyTensor>().tensor};
    for (const py::handle& t : py::iterable(r)) values.push_back(t.cast<PyTensor>().tensor);
    return values;
  };
  const std::vector<Tensor> out =
      takes_mesh_tensorflow_arguments(grad_fn)
          ? custom_gradient(forward, python_all_inputs_gradient(keep(grad_fn)), inputs)
          : custom_gradient(forward, python_gradient(keep(grad_fn)), inputs);
  return tensors_to_py(out, several);
}

}  // namespace

void bind_slicewise(py::module_& m) {
  m.def("custom_gradient", &custom_gradient_py, py::arg("fn"), py::arg("grad_fn"),
        py::arg("explicit_inputs"),
        "fn(*inputs) (graph ops; a tensor or a tuple) whose gradient is grad_fn's instead of "
        "the gradient through fn's ops. grad_fn(op, *dys) (op.inputs, op.outputs) returns the "
        "inputs' gradients (None where none); tensors fn reads besides inputs then get none "
        "through it. Mesh TensorFlow's grad_fn(explicit_inputs, all_inputs, "
        "forward_operations, outputs, output_grads) (called by keyword; told apart by its "
        "output_grads or **kwargs parameter) returns gradients for all_inputs: the inputs, then "
        "every tensor from outside fn that fn's ops read, variables among them.");
  m.def("slicewise", &slicewise_py, py::arg("fn"), py::arg("xs"),
        py::arg("output_shape") = py::none(), py::arg("output_dtype") = py::none(),
        py::arg("splittable_dims") = py::none(), py::arg("grad_function") = py::none(),
        py::arg("name") = py::none(), py::arg("flops_per_element") = 1.0,
        "fn (NumPy arrays in, an array or a tuple of arrays out) on each processor's slices of "
        "xs, as Mesh TensorFlow's slicewise: output_shape/output_dtype default to the first "
        "input's (lists for several outputs); dimensions in splittable_dims may be split, the "
        "others arrive whole; grad_function(op, *dys) returns the inputs' gradients from graph "
        "ops (0: none flows; None: a gradient through the op is an error). bfloat16 crosses as "
        "float32. fn may run on several slices at once and on every step.");
  m.def(
      "cwise",
      [](const py::object& fn, const std::vector<Tensor>& xs, const py::object& output_dtype,
         const py::object& grad_function, const std::optional<std::string>& name) {
        if (xs.empty()) throw ValueError("cwise: needs at least one input tensor");
        py::list dims;
        for (const Dimension& d : xs[0].shape().dims()) dims.append(d.name);
        return slicewise_py(fn, xs, py::none(), output_dtype, dims, grad_function,
                            name.value_or("cwise"), 1.0);
      },
      py::arg("fn"), py::arg("xs"), py::arg("output_dtype") = py::none(),
      py::arg("grad_function") = py::none(), py::arg("name") = py::none(),
      "An elementwise NumPy fn of same-shaped xs (Mesh TensorFlow's cwise): slicewise with "
      "every dimension splittable.");
}

}  // namespace mtf::python
