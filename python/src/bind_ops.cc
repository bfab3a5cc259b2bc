// bind_ops.cc — every op of mtf/ops.h, with Mesh TensorFlow's argument
// names (reduce_sum(x, output_shape=..., reduced_dim=...), pad(x, [before,
// after], dim_name), split(x, dim, num_or_size_splits), ...).
#include <pybind11/functional.h>

#include "array_convert.h"
#include "handles.h"

namespace mtf::python {
namespace {

using OptShape = std::optional<Shape>;

const Shape* ptr(const OptShape& s) { return s ? &*s : nullptr; }

// Mesh TensorFlow's reduction arguments: output_shape or reduced_dim (or
// neither: to a scalar).
ReduceSpec reduce_spec(const char* op, const OptShape& output_shape,
                       const std::optional<DimRef>& reduced_dim) {
  if (output_shape && reduced_dim) {
    throw ValueError(std::string(op) + ": give output_shape or reduced_dim, not both");
  }
  if (output_shape) return ReduceSpec(*output_shape);
  if (reduced_dim) return ReduceSpec(*reduced_dim);
  return ReduceSpec(Shape());
}

// Mesh TensorFlow's einsum(xs, output_shape, reduced_dims): the output is
// every input dimension but reduced_dims, in order of first appearance; with
// both given they must agree.
Shape einsum_output_shape(const std::vector<Tensor>& xs, const OptShape& output_shape,
                          const std::vector<Dimension>& reduced_dims) {
  std::vector<Dimension> kept, all;
  const Shape reduced(reduced_dims);
  for (const Tensor& x : xs)
    for (const Dimension& d : x.shape())
      if (!Shape(all).contains(d.name)) {
        all.push_back(d);
        if (!reduced.contains(d.name)) kept.push_back(d);
      }
  if (output_shape && !Shape(kept).same_dims_as(*output_shape)) {
    throw ValueError("einsum: reduced_dims " + reduced.to_string() + " and output_shape " +
                     output_shape->to_string() + " do not agree (the inputs' dimensions are " +
                     Shape(all).to_string() + ")");
  }
  return output_shape ? *output_shape : Shape(kept);
}

template <Tensor (*F)(const Tensor&, const std::string&)>
void unary(py::module_& m, const char* name, const char* doc) {
  m.def(name, F, py::arg("x"), py::arg("name") = "", doc);
}

template <Tensor (*F)(const Tensor&, const Tensor&, const Shape*)>
void broadcasting(py::module_& m, const char* name) {
  m.def(
      name,
      [](const Tensor& a, const py::object& b, const OptShape& output_shape) {
        return F(a, scalar_or_tensor(a, b), ptr(output_shape));
      },
      py::arg("x1"), py::arg("x2"), py::arg("output_shape") = py::none());
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
void comparison(py::module_& m, const char* name) {
  // Either side may be a Python number (a scalar of the other's dtype), as
  // in Mesh TensorFlow.
  m.def(
      name,
      [](const py::object& a, const py::object& b) {
        if (!py::isinstance<PyTensor>(a) && !py::isinstance<PyTensor>(b))
          throw ValueError("comparison: at least one of x1 and x2 must be an mtf.Tensor");
        const Tensor& t =
            py::isinstance<PyTensor>(a) ? a.cast<PyTensor>().tensor : b.cast<PyTensor>().tensor;
        return F(scalar_or_tensor(t, a), scalar_or_tensor(t, b));
      },
      py::arg("x1"), py::arg("x2"), "A bool tensor: True where the comparison holds.");
}

void bind_creation_and_unary(py::module_& m) {
  // ---- creation
  m.def(
      "constant",
      [](const Mesh& mesh, const py::object& value, const OptShape& shape, DType dtype,
         const std::string& name) {
        if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value) ||
            py::isinstance<py::bool_>(value)) {
          return constant(mesh, value.cast<float>(), shape.value_or(Shape()), dtype, name);
        }
        // An array: its values, as a constant of `shape` (its own shape's
        // sizes must match).
        if (!shape) {
          throw ValueError("constant: an array value needs shape=, naming its dimensions");
        }
        return import_host(mesh, array_to_host(value, *shape, dtype, "constant " + name), name);
      },
      py::arg("mesh"), py::arg("value"), py::arg("shape") = py::none(), py::arg("dtype") = float32,
      py::arg("name") = "",
      "A tensor of `shape` filled with a scalar, or holding a NumPy array's values.");
  m.def("zeros", &zeros, py::arg("mesh"), py::arg("shape"), py::arg("dtype") = float32);
  m.def("ones", &ones, py::arg("mesh"), py::arg("shape"), py::arg("dtype") = float32);
  m.def("zeros_like", &zeros_like, py::arg("t"), "Zeros of t's shape and dtype.");
  m.def("ones_like", &ones_like, py::arg("t"), "Ones of t's shape and dtype.");
  m.def(
      "import_fully_replicated",
      [](const Mesh& mesh, const py::object& array, const Shape& shape, const std::string& name) {
        const DType dtype = array_dtype(array);
        return import_host(mesh, array_to_host(array, shape, dtype, "import " + name), name);
      },
      py::arg("mesh"), py::arg("array"), py::arg("shape"), py::arg("name") = "",
      "A constant holding a copy of a NumPy array (float32 or int32 kinds).");
  m.def("placeholder", &placeholder, py::arg("mesh"), py::arg("shape"), py::arg("dtype") = float32,
        py::arg("name") = "placeholder", "A value fed at each Session.run (feed_dict).");

  // ---- elementwise unary
  unary<&mtf::relu>(m, "relu", "max(x, 0)");
  unary<&mtf::gelu>(m, "gelu", "tanh approximation, as Mesh TensorFlow's gelu");
  unary<&mtf::exp>(m, "exp", "");
  unary<&mtf::log>(m, "log", "");
  unary<&mtf::tanh>(m, "tanh", "");
  unary<&mtf::sigmoid>(m, "sigmoid", "");
  unary<&mtf::sqrt>(m, "sqrt", "");
  unary<&mtf::rsqrt>(m, "rsqrt", "");
  unary<&mtf::square>(m, "square", "");
  unary<&mtf::abs>(m, "abs", "");
  unary<&mtf::negative>(m, "negative", "");
  unary<&mtf::reciprocal>(m, "reciprocal", "");
  unary<&mtf::sin>(m, "sin", "");
  unary<&mtf::cos>(m, "cos", "");
  unary<&mtf::softplus>(m, "softplus", "");
  unary<&mtf::sign>(m, "sign", "");
  unary<&mtf::swish>(m, "swish", "x * sigmoid(x)");
  unary<&mtf::elu>(m, "elu", "x above 0, exp(x) - 1 below");
  unary<&mtf::selu>(m, "selu", "1.0507 * (x above 0, 1.6733 * (exp(x) - 1) below)");
  m.def("leaky_relu", &leaky_relu, py::arg("x"), py::arg("alpha") = 0.2f, py::arg("name") = "",
        "max(x, alpha * x), 0 <= alpha <= 1");
  unary<&mtf::identity>(m, "identity", "");
  unary<&mtf::stop_gradient>(m, "stop_gradient", "identity; no gradient flows through it");
  m.def("cast", &cast, py::arg("x"), py::arg("dtype"), py::arg("name") = "");
  m.def(
      "to_float", [](const Tensor& x) { return cast(x, float32); }, py::arg("x"));
  m.def(
      "to_int32", [](const Tensor& x) { return cast(x, int32); }, py::arg("x"));
}

void bind_binary_and_einsum(py::module_& m) {
  // ---- elementwise binary
  broadcasting<&mtf::add>(m, "add");
  broadcasting<&mtf::subtract>(m, "subtract");
  broadcasting<&mtf::subtract>(m, "sub");
  broadcasting<&mtf::multiply>(m, "multiply");
  broadcasting<&mtf::multiply>(m, "mul");
  broadcasting<&mtf::divide>(m, "divide");
  broadcasting<&mtf::divide>(m, "div");
  broadcasting<&mtf::minimum>(m, "minimum");
  broadcasting<&mtf::maximum>(m, "maximum");
  broadcasting<&mtf::pow>(m, "pow");
  broadcasting<&mtf::floordiv>(m, "floordiv");
  broadcasting<&mtf::mod>(m, "mod");
  comparison<&mtf::less>(m, "less");
  comparison<&mtf::less_equal>(m, "less_equal");
  comparison<&mtf::greater>(m, "greater");
  comparison<&mtf::greater_equal>(m, "greater_equal");
  comparison<&mtf::equal>(m, "equal");
  comparison<&mtf::not_equal>(m, "not_equal");
  m.def("logical_not", &logical_not, py::arg("x"),
        "True where x is false (bool; a number is true where nonzero).");
  m.def("logical_and", &logical_and, py::arg("x1"), py::arg("x2"),
        "True where both are true (bool; a number is true where nonzero).");
  m.def("logical_or", &logical_or, py::arg("x1"), py::arg("x2"),
        "True where either is true (bool; a number is true where nonzero).");
  m.def(
      "where",
      [](const Tensor& condition, const py::object& x, const py::object& y) {
        if (!py::isinstance<PyTensor>(x) && !py::isinstance<PyTensor>(y))
          throw ValueError("where: at least one of x and y must be an mtf.Tensor");
        const Tensor& t =
            py::isinstance<PyTensor>(x) ? x.cast<PyTensor>().tensor : y.cast<PyTensor>().tensor;
        return where(condition, scalar_or_tensor(t, x), scalar_or_tensor(t, y));
      },
      py::arg("condition"), py::arg("x"), py::arg("y"),
      "condition ? x : y, broadcast by name; condition is bool (or a number: nonzero); x or y "
      "may be a Python number (a scalar of the other's dtype).");
  m.def("add_n", &add_n, py::arg("xs"));
  m.def("broadcast", static_cast<Tensor (*)(const Tensor&, const Shape&)>(&broadcast), py::arg("x"),
        py::arg("new_shape"));

  // ---- einsum
  m.def(
      "einsum",
      [](const std::vector<Tensor>& xs, const OptShape& output_shape,
         const std::optional<std::vector<Dimension>>& reduced_dims, const std::string& name) {
        if (!reduced_dims) return output_shape ? einsum(xs, *output_shape, name) : einsum(xs, name);
        return einsum(xs, einsum_output_shape(xs, output_shape, *reduced_dims), name);
      },
      py::arg("xs"), py::arg("output_shape") = py::none(), py::arg("reduced_dims") = py::none(),
      py::arg("name") = "",
      "Contraction by dimension name: dimensions absent from output_shape are summed "
      "(default output: the dimensions in exactly one input; with reduced_dims, every input "
      "dimension but those, in order of appearance).");
  m.def(
      "matmul",
      [](const Tensor& a, const Tensor& b, const OptShape& output_shape) {
        return matmul(a, b, ptr(output_shape));
      },
      py::arg("a"), py::arg("b"), py::arg("output_shape") = py::none());
}

void bind_reductions(py::module_& m) {
  // ---- reductions
  auto reduction = [&](const char* name, Tensor (*f)(const Tensor&, const ReduceSpec&)) {
    m.def(
        name,
        [name, f](const Tensor& x, const OptShape& output_shape,
                  const std::optional<DimRef>& reduced_dim) {
          return f(x, reduce_spec(name, output_shape, reduced_dim));
        },
        py::arg("x"), py::kw_only(), py::arg("output_shape") = py::none(),
        py::arg("reduced_dim") = py::none(),
        "Reduces to output_shape, or removes reduced_dim; neither: to a scalar.");
  };
  reduction("reduce_sum", static_cast<Tensor (*)(const Tensor&, const ReduceSpec&)>(&reduce_sum));
  reduction("reduce_mean", static_cast<Tensor (*)(const Tensor&, const ReduceSpec&)>(&reduce_mean));
  reduction("reduce_max", static_cast<Tensor (*)(const Tensor&, const ReduceSpec&)>(&reduce_max));
  reduction("reduce_min", static_cast<Tensor (*)(const Tensor&, const ReduceSpec&)>(&reduce_min));
  reduction("reduce_all", &reduce_all);
  reduction("reduce_any", &reduce_any);
  m.def(
      "reduce_logsumexp",
      [](const Tensor& x, const std::optional<DimRef>& reduced_dim, const py::object& extra_logit,
         const OptShape& output_shape) {
        if (!extra_logit.is_none()) {
          if (!reduced_dim) throw ValueError("reduce_logsumexp: extra_logit needs reduced_dim");
          return reduce_logsumexp(x, *reduced_dim, scalar_or_tensor(x, extra_logit));
        }
        return reduce_logsumexp(x, reduce_spec("reduce_logsumexp", output_shape, reduced_dim));
      },
      py::arg("x"), py::arg("reduced_dim") = py::none(), py::arg("extra_logit") = py::none(),
      py::kw_only(), py::arg("output_shape") = py::none(),
      "log(sum(exp(x))) over reduced_dim (or to output_shape); extra_logit: one more logit "
      "of that value counted in the sum.");
  m.def("global_norm", &global_norm, py::arg("tensors"),
        "sqrt of the sum of squares of every element of every tensor (one allreduce).");
  m.def("reduce_sum_of_squares", &reduce_sum_of_squares, py::arg("factors"),
        py::arg("output_shape"),
        "The sum, over the dimensions output_shape lacks, of the square of the product of "
        "1 to 3 factors broadcast into the first's shape (the first float32 or bfloat16, the "
        "others float32), in one pass: neither the product nor its square is stored (float32 "
        "result).");
}

void bind_softmax_and_selections(py::module_& m) {
  m.def(
      "softmax",
      [](const Tensor& x, const DimRef& d, const py::object& extra_logit, const std::string&) {
        return extra_logit.is_none() ? softmax(x, d)
                                     : softmax(x, d, scalar_or_tensor(x, extra_logit));
      },
      py::arg("x"), py::arg("reduced_dim"), py::arg("extra_logit") = py::none(),
      py::arg("name") = "");
  m.def(
      "log_softmax",
      [](const Tensor& x, const DimRef& d, const py::object& extra_logit, const std::string&) {
        return extra_logit.is_none() ? log_softmax(x, d)
                                     : log_softmax(x, d, scalar_or_tensor(x, extra_logit));
      },
      py::arg("x"), py::arg("reduced_dim"), py::arg("extra_logit") = py::none(),
      py::arg("name") = "");
  m.def(
      "top_1",
      [](const Tensor& x, const DimRef& d, DType dtype, const std::string&) {
        return top_1(x, d, dtype);
      },
      py::arg("x"), py::arg("reduced_dim"), py::arg("dtype") = int32, py::arg("name") = "",
      "(index, value) of the largest element along reduced_dim (the last index where it "
      "repeats).");
  m.def(
      "sample_with_temperature",
      [](const Tensor& logits, const DimRef& d, float temperature, const std::string&) {
        return sample_with_temperature(logits, d, temperature);
      },
      py::arg("logits"), py::arg("dim"), py::arg("temperature") = 1.0f, py::arg("name") = "",
      "An index along dim drawn from softmax(logits / temperature) (0: the largest).");
  m.def(
      "reduce_first",
      [](const Tensor& x, const OptShape& output_shape, const std::optional<DimRef>& reduced_dim) {
        return reduce_first(
            x,
            reduce_spec("reduce_first", output_shape, reduced_dim).output_for("reduce_first", x));
      },
      py::arg("x"), py::kw_only(), py::arg("output_shape") = py::none(),
      py::arg("reduced_dim") = py::none(), "The element at index 0 of every reduced dimension.");
  m.def(
      "replace_dimensions",
      [](const py::object& tensor_or_shape, const py::object& old_dims,
         const py::object& new_dims) -> py::object {
        if (py::isinstance<PyTensor>(tensor_or_shape))
          return py::cast(replace_dimensions(tensor_or_shape.cast<PyTensor>().tensor,
                                             dims_of(old_dims), dims_of(new_dims)));
        return py::cast(replace_dimensions(tensor_or_shape.cast<Shape>(), dims_of(old_dims),
                                           dims_of(new_dims)));
      },
      py::arg("tensor_or_shape"), py::arg("old_dim_or_dims"), py::arg("new_dim_or_dims"),
      "The shape with a run of dimensions replaced (a tensor: reshaped to it).");
  m.def("top_k", &top_k, py::arg("x"), py::arg("reduced_dim"), py::arg("k_dim"),
        "(values, int32 indices) of the k = k_dim.size largest along reduced_dim.");
  m.def("nth_largest_element", &nth_largest_element, py::arg("x"), py::arg("n"),
        py::arg("reduced_dim"));
  m.def("nth_smallest_element", &nth_smallest_element, py::arg("x"), py::arg("n"),
        py::arg("reduced_dim"));
  m.def("weights_nonzero", &weights_nonzero, py::arg("targets"), py::arg("dtype") = float32);
  m.def(
      "argmax",
      [](const Tensor& x, const DimRef& reduced_dim) {
        const Tensor idx = top_k(x, reduced_dim, Dimension{"top_k_argmax", 1}).second;
        return reshape(idx, x.shape().minus(Shape({reduced_dim.in(x.shape(), "argmax", "x")})));
      },
      py::arg("x"), py::arg("reduced_dim"), "Index of the largest value along reduced_dim.");
}

void bind_layout_indices_randomness(py::module_& m) {
  // ---- layout of a tensor
  m.def("reshape", &reshape, py::arg("x"), py::arg("new_shape"), py::arg("name") = "");
  m.def("rename_dimension", &rename_dimension, py::arg("x"), py::arg("old_name"),
        py::arg("new_name"));
  m.def("transpose", &transpose, py::arg("x"), py::arg("new_shape"), py::arg("name") = "");
  m.def("slice", &slice, py::arg("x"), py::arg("begin"), py::arg("size"),
        py::arg("slice_dim_name"));
  m.def(
      "pad",
      [](const Tensor& x, const std::vector<int64_t>& paddings, const DimRef& dim) {
        if (paddings.size() != 2) {
          throw ValueError("pad: paddings must be [before, after], got " +
                           std::to_string(paddings.size()) + " numbers");
        }
        return pad(x, paddings[0], paddings[1], dim);
      },
      py::arg("x"), py::arg("paddings"), py::arg("dim_name"));
  m.def("concat", &concat, py::arg("xs"), py::arg("concat_dim_name"));
  m.def(
      "split",
      [](const Tensor& x, const DimRef& dim, const py::object& num_or_sizes) {
        if (py::isinstance<py::int_>(num_or_sizes)) {
          return split(x, dim, num_or_sizes.cast<int>());
        }
        return split(x, dim, num_or_sizes.cast<std::vector<int64_t>>());
      },
      py::arg("x"), py::arg("split_dim"), py::arg("num_or_size_splits"));
  m.def("stack", &stack, py::arg("xs"), py::arg("dim_name"), py::arg("axis") = 0);
  m.def("unstack", &unstack, py::arg("x"), py::arg("dim"));
  m.def("shift", static_cast<Tensor (*)(const Tensor&, int64_t, const DimRef&, bool)>(&shift),
        py::arg("x"), py::arg("offset"), py::arg("dim"), py::arg("wrap"));
  m.def("dynamic_shift", &dynamic_shift, py::arg("x"), py::arg("offset"), py::arg("dim"),
        py::arg("wrap"), "Shift along dim by an int32 offset that varies over its dimensions.");
  m.def("cumsum", &cumsum, py::arg("x"), py::arg("dim"), py::arg("exclusive") = false,
        py::arg("reverse") = false);
  m.def("cumprod", &cumprod, py::arg("x"), py::arg("dim"), py::arg("exclusive") = false,
        py::arg("reverse") = false);

  // ---- convolutions and pooling (channels last)
  m.def("conv", &conv, py::arg("x"), py::arg("conv_filter"),
        py::arg("strides") = std::vector<int64_t>{}, py::arg("padding") = "SAME",
        py::arg("dilations") = std::vector<int64_t>{}, py::arg("name") = "",
        "N-d convolution of [batch..., spatial..., channels] with a filter [spatial..., in, "
        "out].");
  m.def("conv_transpose", &conv_transpose, py::arg("x"), py::arg("conv_filter"),
        py::arg("strides") = std::vector<int64_t>{}, py::arg("padding") = "SAME",
        py::arg("dilations") = std::vector<int64_t>{}, py::arg("name") = "");
  m.def("max_pool", &max_pool, py::arg("x"), py::arg("ksize"),
        py::arg("strides") = std::vector<int64_t>{}, py::arg("padding") = "VALID",
        py::arg("name") = "");
  m.def("avg_pool", &avg_pool, py::arg("x"), py::arg("ksize"),
        py::arg("strides") = std::vector<int64_t>{}, py::arg("padding") = "VALID",
        py::arg("name") = "");

  // ---- indices
  m.def("one_hot", &one_hot, py::arg("indices"), py::arg("output_dim"), py::arg("on_value") = 1.0f,
        py::arg("off_value") = 0.0f, py::arg("dtype") = float32);
  m.def("range", &range, py::arg("mesh"), py::arg("dim"), py::arg("dtype") = int32);
  m.def(
      "gather",
      [](const Tensor& w, const Tensor& idx, const DimRef& dim, const OptShape& output_shape) {
        return output_shape ? gather(w, idx, dim, *output_shape) : gather(w, idx, dim);
      },
      py::arg("weights"), py::arg("indices"), py::arg("dim"), py::arg("output_shape") = py::none());

  // ---- randomness
  m.def("random_uniform", &random_uniform, py::arg("mesh"), py::arg("shape"),
        py::arg("minval") = 0.0f, py::arg("maxval") = 1.0f, py::arg("seed") = 0);
  m.def("random_normal", &random_normal, py::arg("mesh"), py::arg("shape"), py::arg("mean") = 0.0f,
        py::arg("stddev") = 1.0f, py::arg("seed") = 0);
  m.def(
      "dropout",
      [](const Tensor& x, const py::object& is_training_or_keep_prob,
         std::optional<float> keep_prob, std::optional<float> rate, const OptShape& noise_shape,
         uint64_t seed, const std::string&) {
        const DropoutArgs d = dropout_args(is_training_or_keep_prob, keep_prob, rate);
        if (!d.keep) throw ValueError("dropout: give exactly one of keep_prob and rate");
        if (!d.training) return x;
        return dropout(x, *d.keep, seed, ptr(noise_shape));
      },
      py::arg("x"), py::arg("is_training") = py::none(), py::arg("keep_prob") = py::none(),
      py::arg("rate") = py::none(), py::arg("noise_shape") = py::none(), py::arg("seed") = 0,
      py::arg("name") = "",
      "dropout(x, is_training, keep_prob=None, rate=None) as Mesh TensorFlow, or dropout(x, "
      "keep_prob); identity when is_training is False.");

  // ---- losses
  m.def("softmax_cross_entropy_with_logits", &softmax_cross_entropy_with_logits, py::arg("logits"),
        py::arg("targets"), py::arg("vocab_dim"), py::arg("z_loss") = 0.0f);
}

}  // namespace

void bind_ops(py::module_& m) {
  bind_creation_and_unary(m);
  bind_binary_and_einsum(m);
  bind_reductions(m);
  bind_softmax_and_selections(m);
  bind_layout_indices_randomness(m);
}

}  // namespace mtf::python
