// bind_graph.cc — dimensions, shapes, dtypes, Graph, Mesh, Tensor and
// Operation, with Mesh TensorFlow's Python names (mtf.Dimension("batch",
// 100), mtf.Shape([...]), mtf.convert_to_shape("batch:100;hidden:1024")).
#include <mutex>
#include <unordered_map>

#include "handles.h"

namespace mtf::python {
namespace {

std::mutex g_graphs_mu;
std::unordered_map<const Graph*, std::weak_ptr<Graph>> g_graphs;

std::string dimension_repr(const Dimension& d) {
  return "Dimension(name='" + d.name + "', size=" + std::to_string(d.size) + ")";
}

// Python values that stand for a shape: a Shape, a shape string, a list or
// tuple of Dimensions or of (name, size) pairs.
Shape to_shape(const py::handle& h) {
  if (py::isinstance<Shape>(h)) return h.cast<Shape>();
  if (py::isinstance<py::str>(h)) return Shape(h.cast<std::string>());
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    std::vector<Dimension> dims;
    for (py::handle item : h) {
      if (py::isinstance<Dimension>(item)) {
        dims.push_back(item.cast<Dimension>());
      } else if (py::isinstance<py::tuple>(item) && py::len(item) == 2) {
        auto t = item.cast<py::tuple>();
        dims.push_back({t[0].cast<std::string>(), t[1].cast<int64_t>()});
      } else {
        throw ShapeError("a shape's items must be mtf.Dimension or (name, size) pairs, not " +
                         py::repr(item).cast<std::string>());
      }
    }
    return Shape(std::move(dims));
  }
  throw ShapeError("cannot make a shape of " + py::repr(h).cast<std::string>() +
                   ": pass an mtf.Shape, a string such as \"batch:100;hidden:1024\" or a list "
                   "of mtf.Dimension");
}

template <typename F>
py::object binary(const PyTensor& a, const py::object& b, F f) {
  if (py::isinstance<PyTensor>(b)) return py::cast(wrap(f(a.tensor, b.cast<PyTensor>().tensor)));
  if (py::isinstance<py::float_>(b) || py::isinstance<py::int_>(b)) {
    return py::cast(wrap(f(a.tensor, scalar_or_tensor(a.tensor, b))));
  }
  return py::reinterpret_borrow<py::object>(py::handle(Py_NotImplemented));
}
template <typename F>
py::object reflected(const PyTensor& a, const py::object& b, F f) {
  if (py::isinstance<py::float_>(b) || py::isinstance<py::int_>(b)) {
    return py::cast(wrap(f(scalar_or_tensor(a.tensor, b), a.tensor)));
  }
  return py::reinterpret_borrow<py::object>(py::handle(Py_NotImplemented));
}

}  // namespace

std::shared_ptr<Graph> owner_of(const Graph& graph) {
  std::lock_guard<std::mutex> lock(g_graphs_mu);
  auto it = g_graphs.find(&graph);
  return it == g_graphs.end() ? nullptr : it->second.lock();
}

Graph& graph_arg(const std::shared_ptr<Graph>& graph, const char* where) {
  if (!graph) throw ValueError(std::string(where) + ": expected an mtf.Graph, got None");
  return *graph;
}

void register_graph(const Graph* graph, const std::weak_ptr<Graph>& owner) {
  std::lock_guard<std::mutex> lock(g_graphs_mu);
  if (owner.expired()) {
    g_graphs.erase(graph);
  } else {
    g_graphs[graph] = owner;
  }
}

std::shared_ptr<Graph> make_graph() {
  return make_graph_owner<Graph>([](Graph& g) -> Graph& { return g; });
}

std::vector<PyOperation> wrap(const std::vector<Operation*>& ops) {
  std::vector<PyOperation> out;
  for (Operation* op : ops) out.push_back(wrap(op));
  return out;
}
std::vector<Operation*> unwrap(const std::vector<PyOperation>& ops) {
  std::vector<Operation*> out;
  for (const auto& op : ops) out.push_back(op.op);
  return out;
}

namespace {

// Python's operator `name` (and its reflected form `rname`, for a number on
// the left, unless empty) as f on tensors and Python numbers.
template <typename F>
void def_operator(py::class_<PyTensor>& tensor, const char* name, const char* rname, F f) {
  tensor.def(name, [f](const PyTensor& a, const py::object& b) { return binary(a, b, f); });
  if (*rname)
    tensor.def(rname, [f](const PyTensor& a, const py::object& b) { return reflected(a, b, f); });
}

// Arithmetic with tensors and Python numbers (either side), and the logical
// operators on bool tensors.
void bind_tensor_operators(py::class_<PyTensor>& tensor) {
  using T = const Tensor&;
  def_operator(tensor, "__add__", "__radd__", [](T x, T y) { return x + y; });
  def_operator(tensor, "__sub__", "__rsub__", [](T x, T y) { return x - y; });
  def_operator(tensor, "__mul__", "__rmul__", [](T x, T y) { return x * y; });
  def_operator(tensor, "__truediv__", "__rtruediv__", [](T x, T y) { return x / y; });
  def_operator(tensor, "__pow__", "", [](T x, T y) { return pow(x, y); });
  def_operator(tensor, "__floordiv__", "__rfloordiv__", [](T x, T y) { return floordiv(x, y); });
  def_operator(tensor, "__mod__", "__rmod__", [](T x, T y) { return mod(x, y); });
  tensor.def("__neg__", [](const PyTensor& a) { return -a.tensor; })
      .def("__and__",
           [](const PyTensor& a, const PyTensor& b) { return logical_and(a.tensor, b.tensor); })
      .def("__or__",
           [](const PyTensor& a, const PyTensor& b) { return logical_or(a.tensor, b.tensor); })
      .def("__invert__", [](const PyTensor& a) { return logical_not(a.tensor); });
}

}  // namespace

void bind_graph(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("float32", DType::kFloat32)
      .value("int32", DType::kInt32)
      .value("bfloat16", DType::kBFloat16)
      .value("bool", DType::kBool)
      .def_property_readonly("name", [](DType d) { return dtype_name(d); })
      .def_property_readonly("size", [](DType d) { return dtype_size(d); });
  m.attr("float32") = DType::kFloat32;
  m.attr("int32") = DType::kInt32;
  m.attr("bfloat16") = DType::kBFloat16;
  m.attr("bool_") = DType::kBool;  // Mesh TensorFlow code writes tf.bool: mtf.bool too
  m.attr("bool") = DType::kBool;

  py::class_<Dimension>(m, "Dimension", "A named dimension: (name, size).")
      .def(py::init([](std::string name, int64_t size) {
             if (name.empty()) throw ShapeError("a Dimension needs a name");
             if (size < 0) throw ShapeError("Dimension " + name + " has negative size");
             return Dimension{std::move(name), size};
           }),
           py::arg("name"), py::arg("size"))
      .def_readonly("name", &Dimension::name)
      .def_readonly("size", &Dimension::size)
      .def("__repr__", &dimension_repr)
      .def("__str__", &Dimension::to_string)
      .def("__eq__", [](const Dimension& a, const Dimension& b) { return a == b; })
      .def("__hash__", [](const Dimension& d) { return py::hash(py::make_tuple(d.name, d.size)); })
      .def("__iter__", [](const Dimension& d) { return py::iter(py::make_tuple(d.name, d.size)); })
      .def("__getitem__", [](const Dimension& d, int i) -> py::object {
        if (i == 0 || i == -2) return py::str(d.name);
        if (i == 1 || i == -1) return py::int_(d.size);
        throw py::index_error("Dimension has two fields: name and size");
      });

  py::class_<Shape>(m, "Shape", "An ordered list of dimensions with distinct names.")
      .def(py::init([](const py::object& dims) { return to_shape(dims); }), py::arg("dims"))
      .def_property_readonly("dims", &Shape::dims)
      .def_property_readonly("ndims", &Shape::ndims)
      .def_property_readonly("size", &Shape::num_elements)
      .def_property_readonly("dimension_names", &Shape::names)
      .def_property_readonly("to_integer_list", &Shape::sizes)
      .def("get_dim_by_name", &Shape::get, py::arg("name"))
      .def("rename_dimension", &Shape::rename, py::arg("old_name"), py::arg("new_name"))
      .def("resize_dimension", &Shape::resize, py::arg("name"), py::arg("new_size"))
      .def("__sub__", [](const Shape& a, const py::object& b) { return a.minus(to_shape(b)); })
      .def("__add__",
           [](const Shape& a, const py::object& b) {
             std::vector<Dimension> dims = a.dims();
             for (const Dimension& d : to_shape(b)) dims.push_back(d);
             return Shape(std::move(dims));
           })
      .def("is_subset_of",
           [](const Shape& a, const py::object& b) { return a.is_subset_of(to_shape(b)); })
      .def("__len__", &Shape::ndims)
      .def("__getitem__",
           [](const Shape& s, int i) {
             if (i < 0) i += s.ndims();
             if (i < 0 || i >= s.ndims()) throw py::index_error("shape index out of range");
             return s[i];
           })
      .def(
          "__iter__", [](const Shape& s) { return py::make_iterator(s.begin(), s.end()); },
          py::keep_alive<0, 1>())
      .def("__contains__",
           [](const Shape& s, const py::object& d) {
             return py::isinstance<Dimension>(d) ? s.contains(d.cast<Dimension>())
                                                 : s.contains(d.cast<std::string>());
           })
      .def("__eq__",
           [](const Shape& a, const py::object& b) {
             try {
               return a == to_shape(b);
             } catch (const Error&) {
               return false;
             }
           })
      .def("__hash__", [](const Shape& s) { return py::hash(py::str(s.to_string())); })
      .def("to_string",
           [](const Shape& s) {
             std::string out;
             for (const Dimension& d : s) out += (out.empty() ? "" : ";") + d.to_string();
             return out;
           })
      .def("__repr__", [](const Shape& s) { return "Shape(" + s.to_string() + ")"; });
  py::implicitly_convertible<py::str, Shape>();
  py::implicitly_convertible<py::list, Shape>();
  py::implicitly_convertible<py::tuple, Shape>();
  m.def(
      "convert_to_shape",
      [](const py::object& x) -> py::object {
        return x.is_none() ? py::none() : py::cast(to_shape(x));
      },
      py::arg("x"),
      "A Shape from a Shape, a string \"a:2;b:3\" or a list of Dimensions (None: None).");
  m.def(
      "convert_to_dimension",
      [](const py::object& x) -> py::object {
        if (x.is_none()) return py::none();
        if (py::isinstance<Dimension>(x)) return x;
        if (!py::isinstance<py::tuple>(x) && !py::isinstance<py::list>(x))
          throw py::type_error("convert_to_dimension: a Dimension or a (name, size) pair, not " +
                               std::string(py::str(x.get_type())));
        auto t = py::tuple(x);
        if (t.size() != 2)
          throw py::type_error("convert_to_dimension: a (name, size) pair has two items");
        return py::cast(Dimension{t[0].cast<std::string>(), t[1].cast<int64_t>()});
      },
      py::arg("x"), "A Dimension from a Dimension or a (name, size) pair (None: None).");

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph", "A graph of operations on named tensors.")
      .def(py::init(&make_graph))
      .def_property("seed", &Graph::seed, &Graph::set_seed)
      .def_property_readonly("operations",
                             [](Graph& g) {
                               std::vector<PyOperation> ops;
                               for (const auto& op : g.operations()) ops.push_back(wrap(op.get()));
                               return ops;
                             })
      .def("unique_name", &Graph::unique_name, py::arg("name"), py::arg("mark_as_used") = true,
           "Mesh TensorFlow's unique names: \"a\", \"a_1\", ... (case-insensitive).")
      .def_property_readonly("all_variables", &Graph::all_variables)
      .def_property_readonly("trainable_variables", &Graph::trainable_variables)
      .def(
          "find_operation",
          [](Graph& g, const std::string& name) -> py::object {
            Operation* op = g.find_operation(name);
            return op ? py::cast(wrap(op)) : py::none();
          },
          py::arg("name"))
      .def("to_string", &Graph::to_string)
      .def("__repr__", [](Graph& g) {
        return "<mtf.Graph of " + std::to_string(g.operations().size()) + " operations>";
      });

  py::class_<PyMesh>(m, "Mesh", "A named set of processors in a graph.")
      .def(py::init([](const std::shared_ptr<Graph>& g, const std::string& name) {
             if (name.empty()) throw ValueError("a Mesh needs a name");
             return PyMesh{Mesh(graph_arg(g, "mtf.Mesh"), name), g};
           }),
           py::arg("graph"), py::arg("name"))
      .def_property_readonly("graph", [](const PyMesh& m) { return m.owner; })
      .def_property_readonly("name", [](const PyMesh& m) { return m.mesh.name(); })
      .def("__repr__", [](const PyMesh& m) { return "<mtf.Mesh '" + m.mesh.name() + "'>"; });

  py::class_<PyOperation>(m, "Operation", "One node of the graph.")
      .def_property_readonly("name", [](const PyOperation& o) { return o.op->name(); })
      .def_property_readonly("type", [](const PyOperation& o) { return o.op->type(); })
      .def_property_readonly("inputs", [](const PyOperation& o) { return o.op->inputs(); })
      .def_property_readonly("outputs", [](const PyOperation& o) { return o.op->outputs(); })
      .def_property_readonly("mesh", [](const PyOperation& o) { return o.op->mesh(); })
      .def("__eq__", [](const PyOperation& a, const PyOperation& b) { return a.op == b.op; })
      .def("__hash__", [](const PyOperation& o) { return std::hash<const void*>()(o.op); })
      .def("__repr__",
           [](const PyOperation& o) { return "<mtf.Operation " + o.op->to_string() + ">"; });

  py::class_<PyTensor> tensor(m, "Tensor",
                              "One output of an operation: a handle, holding no data.");
  tensor.def_property_readonly("shape", [](const PyTensor& t) { return t.tensor.shape(); })
      .def_property_readonly("dtype", [](const PyTensor& t) { return t.tensor.dtype(); })
      .def_property_readonly("name", [](const PyTensor& t) { return t.tensor.name(); })
      .def_property_readonly("mesh", [](const PyTensor& t) { return t.tensor.mesh(); })
      .def_property_readonly("graph", [](const PyTensor& t) { return t.owner; })
      .def_property_readonly("operation", [](const PyTensor& t) { return wrap(&t.tensor.op()); })
      .def_property_readonly("size",
                             [](const PyTensor& t) { return t.tensor.shape().num_elements(); })
      .def("__repr__", [](const PyTensor& t) { return "<mtf.Tensor " + t.tensor.describe() + ">"; })
      .def("__eq__",
           [](const PyTensor& a, const py::object& b) {
             return py::isinstance<PyTensor>(b) && a.tensor == b.cast<const PyTensor&>().tensor;
           })
      .def("__hash__", [](const PyTensor& t) {
        return std::hash<const void*>()(&t.tensor.op()) ^ static_cast<size_t>(t.tensor.id());
      });
  bind_tensor_operators(tensor);
}

}  // namespace mtf::python
