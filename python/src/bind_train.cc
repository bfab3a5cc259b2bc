// bind_train.cc — variables and their initializers, assignments,
// gradients, recompute_grad and the optimizers (mtf/variables.h,
// mtf/gradients.h, mtf/optimizers.h).
#include <pybind11/functional.h>

#include <optional>
#include <variant>

#include "handles.h"
#include "learning_rate_arg.h"

namespace mtf::python {
namespace {

// mtf.optimize: learning rates and the optimizers.
void bind_optimizers(py::module_& m) {
  py::module_ opt = m.def_submodule("optimize", "Optimizers (Mesh TensorFlow's optimize.py).");
  py::class_<Optimizer>(opt, "Optimizer")
      .def(
          "apply_grads",
          [](Optimizer& o, const std::vector<Tensor>& grads, const std::vector<Tensor>& variables) {
            return wrap(o.apply_grads(grads, variables));
          },
          py::arg("grads"), py::arg("variables"),
          "Update ops (run them as targets) for each (gradient, variable) pair.")
      .def(
          "minimize", [](Optimizer& o, const Tensor& loss) { return wrap(o.minimize(loss)); },
          py::arg("loss"), "gradients of loss with respect to every trainable variable, applied.")
      .def_property("clip_norm", &Optimizer::clip_norm, &Optimizer::set_clip_norm,
                    "Clip the gradients to this global norm before each update (0: do not).")
      .def("gradient_norm", &Optimizer::gradient_norm,
           "The global norm of the gradients of the last apply_grads/minimize, before "
           "clipping (a scalar Tensor to fetch).");
  opt.def(
      "clip_by_global_norm",
      [](const std::vector<Tensor>& grads, float clip_norm) {
        Tensor norm;
        std::vector<Tensor> clipped = clip_by_global_norm(grads, clip_norm, &norm);
        return std::make_pair(clipped, norm);
      },
      py::arg("grads"), py::arg("clip_norm"),
      "(clipped grads, global norm before clipping), as Mesh TensorFlow's.");
  py::class_<LearningRate>(opt, "LearningRate",
                           "A learning rate: a float, or a schedule evaluated in the graph at the "
                           "optimizer's step, e.g. \"warmup(1000)*rsqrt(1000)\" (every optimizer "
                           "takes a float, a string or a LearningRate).")
      .def(py::init<float>(), py::arg("value"))
      .def(py::init<const std::string&>(), py::arg("schedule"))
      .def("at", &LearningRate::at, py::arg("step"), "The rate at a step (1 = the first update).")
      .def_property_readonly("is_constant", &LearningRate::is_constant)
      .def("__str__", &LearningRate::str)
      .def("__repr__", [](const LearningRate& lr) { return "LearningRate(\"" + lr.str() + "\")"; })
      .def("__float__", &LearningRate::constant_value);
  py::class_<SgdOptimizer, Optimizer>(opt, "SgdOptimizer")
      .def(py::init([](const py::object& lr, std::string name) {
             return SgdOptimizer(learning_rate_arg(lr), std::move(name));
           }),
           py::arg("lr"), py::arg("name") = "sgd");
  py::class_<MomentumOptimizer, Optimizer>(opt, "MomentumOptimizer")
      .def(py::init([](const py::object& lr, float momentum, std::string name) {
             return MomentumOptimizer(learning_rate_arg(lr), momentum, std::move(name));
           }),
           py::arg("learning_rate"), py::arg("momentum"), py::arg("name") = "momentum");
  py::class_<AdamOptimizer, Optimizer>(opt, "AdamOptimizer")
      .def(py::init([](const py::object& lr, float beta1, float beta2, float epsilon,
                       std::string name) {
             return AdamOptimizer(learning_rate_arg(lr), beta1, beta2, epsilon, std::move(name));
           }),
           py::arg("learning_rate"), py::arg("beta_1") = 0.9f, py::arg("beta_2") = 0.999f,
           py::arg("epsilon") = 1e-8f, py::arg("name") = "adam");
  py::class_<AdamWeightDecayOptimizer, AdamOptimizer>(opt, "AdamWeightDecayOptimizer")
      .def(py::init([](const py::object& lr, float weight_decay_rate, float beta1, float beta2,
                       float epsilon, std::vector<std::string> exclude, std::string name) {
             return AdamWeightDecayOptimizer(learning_rate_arg(lr), weight_decay_rate, beta1, beta2,
                                             epsilon, std::move(exclude), std::move(name));
           }),
           py::arg("learning_rate"), py::arg("weight_decay_rate") = 0.0f, py::arg("beta_1") = 0.9f,
           py::arg("beta_2") = 0.999f, py::arg("epsilon") = 1e-6f,
           py::arg("exclude_from_weight_decay") = std::vector<std::string>(),
           py::arg("name") = "adamw",
           "Mesh TensorFlow's AdamW: Adam without bias correction plus decoupled weight decay "
           "(var -= lr * weight_decay_rate * var) on variables no exclude pattern matches.");
  py::class_<GradientAccumulation>(
      opt, "GradientAccumulation",
      "A batch trained as `microbatches` parts: run accumulate_ops with each part's feeds, then "
      "apply_ops once (the optimizer's update with the gradients' mean). weight: a float32 "
      "scalar of the part (e.g. its non-padding tokens) when the loss is a mean weighted by it; "
      "the update is then the whole batch's weighted mean.")
      .def(py::init([](Optimizer& optimizer, const Tensor& loss, int64_t microbatches,
                       const py::object& weight) {
             return std::make_unique<GradientAccumulation>(
                 optimizer, loss, microbatches,
                 weight.is_none() ? Tensor() : weight.cast<Tensor>());
           }),
           py::arg("optimizer"), py::arg("loss"), py::arg("microbatches"),
           py::arg("weight") = py::none(), py::keep_alive<1, 2>())
      .def_property_readonly("accumulate_ops",
                             [](const GradientAccumulation& a) { return wrap(a.accumulate_ops()); })
      .def_property_readonly("apply_ops",
                             [](const GradientAccumulation& a) { return wrap(a.apply_ops()); })
      .def_property_readonly("microbatches", &GradientAccumulation::microbatches);
  opt.def(
      "adafactor_learning_rate",
      [](const py::object& learning_rate, bool multiply_by_parameter_scale) {
        AdafactorOptions o;
        o.learning_rate = learning_rate_arg(learning_rate);
        o.multiply_by_parameter_scale = multiply_by_parameter_scale;
        return o.effective_learning_rate();
      },
      py::arg("learning_rate"), py::arg("multiply_by_parameter_scale") = true,
      "The rate Adafactor applies for this learning_rate (0: its own schedule).");
  py::class_<AdafactorOptimizer, Optimizer>(opt, "AdafactorOptimizer")
      .def(py::init([](bool multiply_by_parameter_scale, const py::object& learning_rate,
                       const py::object& decay_rate, float decay_exponent, float beta1,
                       float clipping_threshold, bool factored, float epsilon1, float epsilon2,
                       int64_t min_dim_size_to_factor, std::vector<std::string> exclude,
                       std::string name) {
             AdafactorOptions o;
             o.multiply_by_parameter_scale = multiply_by_parameter_scale;
             o.learning_rate = learning_rate_arg(learning_rate);
             if (!decay_rate.is_none()) o.decay_rate = py::str(decay_rate);
             o.decay_exponent = decay_exponent;
             o.beta1 = beta1;
             o.clipping_threshold = clipping_threshold;
             o.factored = factored;
             o.epsilon1 = epsilon1;
             o.epsilon2 = epsilon2;
             o.min_dim_size_to_factor = min_dim_size_to_factor;
             o.exclude_from_parameter_scale = std::move(exclude);
             o.name = std::move(name);
             return AdafactorOptimizer(o);
           }),
           py::kw_only(), py::arg("multiply_by_parameter_scale") = true,
           py::arg("learning_rate") = 0.0f, py::arg("decay_rate") = py::none(),
           py::arg("decay_exponent") = 0.8f, py::arg("beta1") = 0.0f,
           py::arg("clipping_threshold") = 1.0f, py::arg("factored") = true,
           py::arg("epsilon1") = 1e-30f, py::arg("epsilon2") = 1e-3f,
           py::arg("min_dim_size_to_factor") = 32,
           py::arg("exclude_from_parameter_scale") = std::vector<std::string>(),
           py::arg("name") = "adafactor",
           "decay_rate: None (1 - step^-decay_exponent), \"pow(E)\", \"adam(B)\" or a "
           "constant such as 0.999.");
}

}  // namespace

void bind_train(py::module_& m) {
  py::class_<Initializer>(m, "Initializer", "How a variable's first value is drawn.")
      .def_static("zeros", &Initializer::zeros)
      .def_static("ones", &Initializer::ones)
      .def_static("constant", &Initializer::constant, py::arg("value"))
      .def_static("normal", &Initializer::normal, py::arg("mean") = 0.0f, py::arg("stddev") = 1.0f)
      .def_static("truncated_normal", &Initializer::truncated_normal, py::arg("stddev") = 1.0f)
      .def_static("uniform", &Initializer::uniform, py::arg("minval") = 0.0f,
                  py::arg("maxval") = 1.0f)
      .def_static("glorot_uniform", &Initializer::glorot_uniform)
      .def("__repr__", [](const Initializer& i) {
        static const char* kinds[] = {
            "zeros", "ones", "constant", "normal", "truncated_normal", "uniform", "glorot_uniform"};
        return std::string("<mtf.Initializer ") + kinds[static_cast<int>(i.kind)] + ">";
      });
  // TensorFlow's spellings.
  m.def("zeros_initializer", &Initializer::zeros);
  m.def("ones_initializer", &Initializer::ones);
  m.def("constant_initializer", &Initializer::constant, py::arg("value"));
  m.def("random_normal_initializer", &Initializer::normal, py::arg("mean") = 0.0f,
        py::arg("stddev") = 1.0f);
  m.def("truncated_normal_initializer", &Initializer::truncated_normal, py::arg("stddev") = 1.0f);
  m.def("random_uniform_initializer", &Initializer::uniform, py::arg("minval") = 0.0f,
        py::arg("maxval") = 1.0f);
  m.def("glorot_uniform_initializer", &Initializer::glorot_uniform);

  py::class_<VariableDType>(m, "VariableDType",
                            "Mesh TensorFlow's VariableDType: master (checkpoints), slice (stored "
                            "per processor, updated) and activation (read) dtypes")
      .def(py::init([](DType master, std::optional<DType> slice, std::optional<DType> activation) {
             VariableDType d(master, slice.value_or(master), activation.value_or(master));
             d.validate("VariableDType");
             return d;
           }),
           py::arg("master_dtype") = float32, py::arg("slice_dtype") = py::none(),
           py::arg("activation_dtype") = py::none())
      .def_readonly("master_dtype", &VariableDType::master)
      .def_readonly("slice_dtype", &VariableDType::slice)
      .def_readonly("activation_dtype", &VariableDType::activation)
      .def("__repr__",
           [](const VariableDType& d) { return "mtf.VariableDType(" + d.to_string() + ")"; });

  m.def(
      "get_variable",
      [](const Mesh& mesh, const std::string& name, const Shape& shape,
         std::optional<Initializer> initializer, std::variant<DType, VariableDType> dtype,
         bool trainable) {
        const VariableDType d = std::holds_alternative<DType>(dtype)
                                    ? VariableDType::of(std::get<DType>(dtype))
                                    : std::get<VariableDType>(dtype);
        return get_variable(mesh, name, shape, initializer.value_or(Initializer::glorot_uniform()),
                            d, trainable);
      },
      py::arg("mesh"), py::arg("name"), py::arg("shape"), py::arg("initializer") = py::none(),
      py::arg("dtype") = float32, py::arg("trainable") = true,
      "A new variable (names are unique: checkpoints key on them); returns its value.");
  m.def("is_variable", &is_variable, py::arg("tensor"));
  m.def(
      "assign", [](const Tensor& var, const Tensor& value) { return wrap(assign(var, value)); },
      py::arg("var"), py::arg("new_val"));
  m.def(
      "assign_add",
      [](const Tensor& var, const Tensor& value) { return wrap(assign_add(var, value)); },
      py::arg("var"), py::arg("new_val"));
  m.def(
      "assign_sub",
      [](const Tensor& var, const Tensor& value) { return wrap(assign_sub(var, value)); },
      py::arg("var"), py::arg("new_val"));
  m.def(
      "assign_slice",
      [](const Tensor& var, const Tensor& value, int64_t begin, const DimRef& dim) {
        return wrap(assign_slice(var, value, begin, dim));
      },
      py::arg("var"), py::arg("new_val"), py::arg("begin"), py::arg("dim"),
      "var with positions [begin, begin + n) of dim replaced by new_val (var's shape with dim "
      "n long); the other positions keep their values.");

  m.def(
      "gradients",
      [](const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
         const std::optional<std::vector<Tensor>>& grad_ys) {
        return gradients(ys, xs, grad_ys.value_or(std::vector<Tensor>{}));
      },
      py::arg("ys"), py::arg("xs"), py::arg("grad_ys") = py::none(),
      "d(sum of ys)/d(xs) as new graph ops.");
  m.def(
      "recompute_grad",
      [](const py::function& fn, const std::vector<Tensor>& inputs) {
        RecomputeFn f = [fn](const std::vector<Tensor>& xs) {
          py::object out = fn(xs);
          if (py::isinstance<PyTensor>(out))
            return std::vector<Tensor>{out.cast<PyTensor>().tensor};
          return out.cast<std::vector<Tensor>>();
        };
        return recompute_grad(f, inputs);
      },
      py::arg("fn"), py::arg("inputs"),
      "fn(inputs) whose activations are recomputed in the backward pass instead of kept.");

  bind_optimizers(m);
}

}  // namespace mtf::python
