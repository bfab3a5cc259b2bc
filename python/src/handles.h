// handles.h — how graph objects cross into Python.
//
// A C++ Tensor, Mesh or Operation* points into a Graph and is valid while the
// Graph lives. In Python each of them is an object that also holds the Graph
// (std::shared_ptr), so a tensor outlives every other reference to its graph
// safely. Graphs made by mtf.Graph() are registered by address; wrapping a
// handle finds its graph's owner there. The type casters below make every
// C++ function taking or returning Tensor, std::vector<Tensor>, Mesh, DimRef
// or Shape callable from Python as is (pybind11 converts at the boundary),
// so the bindings mostly name C++ functions instead of wrapping them.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "mtf/mtf.h"

namespace mtf::python {

namespace py = pybind11;

// The shared owner of a graph made from Python; nullptr for graphs Python
// did not make (their objects then do not keep them alive).
std::shared_ptr<Graph> owner_of(const Graph& graph);
// The graph a Python argument passes: ValueError naming `where` for None
// (pybind11 passes None as an empty holder).
Graph& graph_arg(const std::shared_ptr<Graph>& graph, const char* where);
// Records (or, for an expired owner, forgets) the shared owner of a graph.
void register_graph(const Graph* graph, const std::weak_ptr<Graph>& owner);
// A new T(args...) that holds a graph (graph_of(t)), kept alive by every
// Python handle into that graph as an mtf.Graph() is; forgotten when it dies.
template <typename T, typename GraphOf, typename... Args>
std::shared_ptr<T> make_graph_owner(GraphOf graph_of, Args&&... args) {
  std::shared_ptr<T> t(new T(std::forward<Args>(args)...), [graph_of](T* p) {
    register_graph(&graph_of(*p), std::weak_ptr<Graph>());
    delete p;
  });
  register_graph(&graph_of(*t), std::shared_ptr<Graph>(t, &graph_of(*t)));
  return t;
}
// A new graph, owned by Python objects.
std::shared_ptr<Graph> make_graph();

struct PyTensor {
  Tensor tensor;
  std::shared_ptr<Graph> owner;
};
struct PyMesh {
  Mesh mesh;
  std::shared_ptr<Graph> owner;
};
struct PyOperation {
  Operation* op = nullptr;
  std::shared_ptr<Graph> owner;
};

inline PyTensor wrap(const Tensor& t) { return {t, t.valid() ? owner_of(t.graph()) : nullptr}; }
inline PyOperation wrap(Operation* op) { return {op, op ? owner_of(op->graph()) : nullptr}; }
std::vector<PyOperation> wrap(const std::vector<Operation*>& ops);
std::vector<Operation*> unwrap(const std::vector<PyOperation>& ops);

// A simulation's options from the Python arguments: the topology (a
// preset name or an mtf.Topology), then a machine file's `key = value`
// lines, then overrides; mode "cost" or "functional" (bind_simulation.cc).
SimOptions sim_options_of(const py::handle& topology, const std::string& machine_file,
                          const std::string& overrides, const std::string& mode,
                          const std::string& trace_path, const std::vector<int>& physical_order);

// The C++ Session inside an mtf.Session (ValueError for anything else;
// bind_session.cc).
Session& session_of(const py::handle& session);

// A simulation's report as a dict: the JSON mtf-sim --json prints, parsed.
py::dict report_dict(const SimReport& report);

// The module's pieces, one per file, called by module.cc in this order.
// One dimension, a list of them or a Shape (Mesh TensorFlow's
// old_dim_or_dims, reduced_dims, ...); None is none.
inline std::vector<Dimension> dims_of(const py::object& o) {
  if (o.is_none()) return {};
  if (py::isinstance<Dimension>(o)) return {o.cast<Dimension>()};
  return o.cast<Shape>().dims();  // a Shape, a list, a tuple or a "a:2;b:3" string
}

// A tensor, or a Python number as a scalar of `like`'s dtype (Mesh
// TensorFlow's binary_arguments_to_tensors).
inline Tensor scalar_or_tensor(const Tensor& like, const py::object& v) {
  if (py::isinstance<PyTensor>(v)) return v.cast<PyTensor>().tensor;
  return constant(like.mesh(), v.cast<float>(), Shape(), like.dtype());
}

// The arguments of Mesh TensorFlow's dropout(x, is_training, keep_prob=None,
// rate=None) and of ours, dropout(x, keep_prob): a bool second argument is
// is_training, a number keep_prob. keep: from keep_prob or 1 - rate, none
// when neither is given (ValueError when both are).
struct DropoutArgs {
  bool training = true;
  std::optional<float> keep;
};
inline DropoutArgs dropout_args(const py::object& is_training_or_keep_prob,
                                std::optional<float> keep_prob, std::optional<float> rate) {
  DropoutArgs a;
  if (py::isinstance<py::bool_>(is_training_or_keep_prob)) {
    a.training = is_training_or_keep_prob.cast<bool>();
  } else if (!is_training_or_keep_prob.is_none()) {
    if (keep_prob) throw ValueError("dropout: keep_prob given twice");
    keep_prob = is_training_or_keep_prob.cast<float>();
  }
  if (keep_prob && rate) throw ValueError("dropout: give keep_prob or rate, not both");
  if (keep_prob) a.keep = *keep_prob;
  if (rate) a.keep = 1.0f - *rate;
  return a;
}

void bind_errors(py::module_& m);
void bind_graph(py::module_& m);
void bind_ops(py::module_& m);
void bind_slicewise(py::module_& m);
void bind_train(py::module_& m);
void bind_layers(py::module_& m);
void bind_local_attention(py::module_& m, py::module_& layers);  // from bind_layers
void bind_session(py::module_& m);
void bind_simulation(py::module_& m);
void bind_checkpoint(py::module_& m);
void bind_summary(py::module_& m);
void bind_data(py::module_& m);
void bind_models(py::module_& m);
void bind_incremental_decoder(py::module_& models);  // before the decoders
void bind_translation(py::module_& m);               // into mtf.models, after bind_models

}  // namespace mtf::python

namespace pybind11::detail {

// mtf::Tensor <-> mtf.Tensor (a PyTensor).
template <>
struct type_caster<mtf::Tensor> {
  PYBIND11_TYPE_CASTER(mtf::Tensor, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!isinstance<mtf::python::PyTensor>(src)) return false;
    value = src.cast<const mtf::python::PyTensor&>().tensor;
    return true;
  }
  static handle cast(const mtf::Tensor& t, return_value_policy, handle) {
    return pybind11::cast(mtf::python::wrap(t)).release();
  }
};

// mtf::Mesh <-> mtf.Mesh (a PyMesh).
template <>
struct type_caster<mtf::Mesh> {
  PYBIND11_TYPE_CASTER(mtf::Mesh, const_name("Mesh"));
  bool load(handle src, bool) {
    if (!isinstance<mtf::python::PyMesh>(src)) return false;
    value = src.cast<const mtf::python::PyMesh&>().mesh;
    return true;
  }
  static handle cast(const mtf::Mesh& m, return_value_policy, handle) {
    return pybind11::cast(mtf::python::PyMesh{m, mtf::python::owner_of(m.graph())}).release();
  }
};

// An existing dimension: its name (str) or an mtf.Dimension.
template <>
struct type_caster<mtf::DimRef> {
  PYBIND11_TYPE_CASTER(mtf::DimRef, const_name("Union[str, Dimension]"));
  type_caster() : value("") {}
  bool load(handle src, bool) {
    if (isinstance<str>(src)) {
      value = mtf::DimRef(src.cast<std::string>());
      return true;
    }
    if (isinstance<mtf::Dimension>(src)) {
      value = mtf::DimRef(src.cast<const mtf::Dimension&>());
      return true;
    }
    return false;
  }
  static handle cast(const mtf::DimRef& d, return_value_policy, handle) {
    return str(d.name()).release();
  }
};

}  // namespace pybind11::detail
