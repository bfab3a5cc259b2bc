// bind_session.cc — mtf.Session: runs a graph on a mesh (SIMD, placement or
// the simulator), NumPy arrays in and out, the GIL released while it
// computes, Ctrl-C stopping a run cleanly; a Python script started by
// mtf-launch or mpirun joins the job as the C++ examples do.
#include <mutex>

#include "array_convert.h"
#include "handles.h"
#include "interruptible.h"
#include "mtf/mpi_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf::python {
namespace {

// The process's multi-process transport, connected on first use and shared
// by every Session of the process (a job connects once).
std::shared_ptr<Transport> process_transport(const std::string& which) {
  static std::mutex mu;
  static std::shared_ptr<Transport> transport;
  static std::string kind;
  std::lock_guard<std::mutex> lock(mu);
  check_process_transport_name(which);
  if (which == "none") return nullptr;
  if (!transport) {
    std::string name;
    transport = connect_process_transport(which, &name);
    kind = name;
  } else if (which != "auto" && which != (kind == "TCP" ? "tcp" : "mpi")) {
    throw ValueError("this process already joined its job over " + kind +
                     "; every Session of a process uses that transport");
  }
  return transport;
}

class PySession {
 public:
  PySession(std::shared_ptr<Graph> graph, MeshConfig config)
      : graph_(std::move(graph)), session_(std::make_unique<Session>(*graph_, std::move(config))) {}

  // fetches: a Tensor (returns its array), an Operation (runs it, returns
  // None) or a list/tuple of those (returns a list).
  py::object run(const py::object& fetches, const py::object& feed_dict,
                 const py::object& targets) {
    std::vector<Tensor> tensors;
    std::vector<Operation*> ops;
    std::vector<int> slot;  // per fetch: index in tensors, or -1 (an op)
    auto add = [&](const py::handle& h) {
      if (py::isinstance<PyTensor>(h)) {
        slot.push_back(static_cast<int>(tensors.size()));
        tensors.push_back(h.cast<const PyTensor&>().tensor);
      } else if (py::isinstance<PyOperation>(h)) {
        slot.push_back(-1);
        ops.push_back(h.cast<const PyOperation&>().op);
      } else {
        throw ValueError(
            "Session.run: fetches must be mtf.Tensor or mtf.Operation (or a list "
            "of them), not " +
            py::repr(h).cast<std::string>());
      }
    };
    const bool single = !py::isinstance<py::list>(fetches) && !py::isinstance<py::tuple>(fetches);
    if (single) {
      add(fetches);
    } else {
      for (py::handle h : fetches) add(h);
    }
    if (!targets.is_none()) {
      for (py::handle h : targets) {
        if (!py::isinstance<PyOperation>(h)) {
          throw ValueError("Session.run: targets must be mtf.Operation, not " +
                           py::repr(h).cast<std::string>());
        }
        ops.push_back(h.cast<const PyOperation&>().op);
      }
    }
    const Feeds feeds = feeds_of(feed_dict, session_.get());
    std::vector<HostTensor> values =
        interruptible([&] { return session_->run(tensors, feeds, ops); });
    auto result = [&](int i) -> py::object {
      if (slot[i] < 0) return py::none();
      HostTensor& v = values[slot[i]];
      if (!v.valid()) return py::none();  // a cost-only simulation holds no values
      return host_to_array(std::move(v));
    };
    if (single) return result(0);
    py::list out;
    for (size_t i = 0; i < slot.size(); ++i) out.append(result(static_cast<int>(i)));
    return out;
  }

  Session& session() { return *session_; }

 private:
  std::shared_ptr<Graph> graph_;  // declared first: destroyed after the session
  std::unique_ptr<Session> session_;
};

}  // namespace

Session& session_of(const py::handle& session) {
  if (!py::isinstance<PySession>(session)) {
    throw ValueError("expected an mtf.Session, got " + py::repr(session).cast<std::string>());
  }
  return session.cast<PySession&>().session();
}

void bind_session(py::module_& m) {
  py::class_<PySession>(m, "Session",
                        "Runs a graph on a mesh and holds its variables' values.\n\n"
                        "mesh_impl: simd (a program per processor), placement (one controller) "
                        "or simulated (the torus simulator, on `topology`).")
      .def(py::init([](const std::shared_ptr<Graph>& graph, const std::string& mesh_shape,
                       const std::string& layout, const std::string& mesh_impl,
                       const std::string& execution, bool reproducible, bool fuse, bool profile,
                       double timeout, const py::object& topology, const std::string& machine_file,
                       const std::string& topology_overrides, const std::string& sim_mode,
                       const std::string& trace_path, const std::vector<int>& physical_order,
                       const std::string& transport, bool check_numerics) {
             graph_arg(graph, "mtf.Session");
             MeshConfig c;
             c.mesh_shape = MeshShape(mesh_shape);
             c.layout = LayoutRules(layout);
             c.impl = parse_mesh_impl(mesh_impl);
             c.execution = parse_rank_execution(execution);
             c.reproducible = reproducible;
             c.fuse = fuse;
             c.profile = profile;
             c.check_numerics = check_numerics;
             if (!(timeout > 0)) throw ValueError("Session: timeout must be positive seconds");
             c.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
             if (c.impl == MeshImpl::kSimulated) {
               c.sim = sim_options_of(topology, machine_file, topology_overrides, sim_mode,
                                      trace_path, physical_order);
             } else if (c.impl == MeshImpl::kSimd) {
               py::gil_scoped_release release;  // waiting for the other ranks
               c.process_transport = process_transport(transport);
             }
             return std::make_unique<PySession>(graph, std::move(c));
           }),
           py::arg("graph"), py::kw_only(), py::arg("mesh_shape") = "", py::arg("layout") = "",
           py::arg("mesh_impl") = "simd", py::arg("execution") = "pool",
           py::arg("reproducible") = false, py::arg("fuse") = true, py::arg("profile") = false,
           py::arg("timeout") = 60.0, py::arg("topology") = "tpu-v2-512",
           py::arg("machine_file") = "", py::arg("topology_overrides") = "",
           py::arg("sim_mode") = "functional", py::arg("trace_path") = "",
           py::arg("physical_order") = std::vector<int>{}, py::arg("transport") = "auto",
           py::arg("check_numerics") = false)
      .def("run", &PySession::run, py::arg("fetches"), py::arg("feed_dict") = py::none(),
           py::arg("targets") = py::none(),
           "Computes fetches (a Tensor, an Operation, or a list of them) with placeholders fed "
           "from feed_dict ({placeholder: array}); returns NumPy arrays (None for operations).")
      .def(
          "check",
          [](PySession& s, const std::vector<Tensor>& fetches,
             const std::vector<PyOperation>& targets) {
            s.session().check(fetches, unwrap(targets));
          },
          py::arg("fetches"), py::arg("targets") = std::vector<PyOperation>{},
          "Lowers the program as run() would, computing nothing: layouts are checked now.")
      .def(
          "variable_value",
          [](PySession& s, const std::string& name) {
            return host_to_array(s.session().variable_value(name));
          },
          py::arg("name"))
      .def(
          "set_variable_value",
          [](PySession& s, const std::string& name, const py::object& value) {
            const HostTensor current = s.session().variable_value(name);
            s.session().set_variable_value(name,
                                           array_to_host(value, current.shape(), current.dtype(),
                                                         "the value of variable " + name));
          },
          py::arg("name"), py::arg("value"))
      .def_property_readonly("variable_names",
                             [](PySession& s) { return s.session().variable_names(); })
      .def_property(
          "run_counter", [](PySession& s) { return s.session().run_counter(); },
          [](PySession& s, uint64_t n) { s.session().set_run_counter(n); })
      .def(
          "program_text",
          [](PySession& s, const std::vector<Tensor>& fetches,
             const std::vector<PyOperation>& targets) {
            return s.session().program_text(fetches, unwrap(targets));
          },
          py::arg("fetches"), py::arg("targets") = std::vector<PyOperation>{})
      .def(
          "counters_text",
          [](PySession& s, const std::vector<Tensor>& fetches,
             const std::vector<PyOperation>& targets) {
            return s.session().counters_text(fetches, unwrap(targets));
          },
          py::arg("fetches"), py::arg("targets") = std::vector<PyOperation>{})
      .def(
          "local_feed_block",
          [](PySession& s, const PyTensor& placeholder) {
            const Session::FeedBlock b = s.session().local_feed_block(placeholder.tensor);
            return py::make_tuple(py::tuple(py::cast(b.begin)),
                                  py::tuple(py::cast(b.shape.sizes())));
          },
          py::arg("placeholder"),
          "(begin, shape) of the block of a placeholder this process needs: feed an array of that "
          "shape (its values) instead of the whole batch to read only this rank's share.")
      .def_property_readonly(
          "last_fed_bytes", [](PySession& s) { return s.session().last_fed_bytes(); },
          "Bytes of the values fed to the last run.")
      .def(
          "explain",
          [](PySession& s, const std::vector<Tensor>& fetches,
             const std::vector<PyOperation>& targets,
             int max_blocks) { return s.session().explain(fetches, unwrap(targets), max_blocks); },
          py::arg("fetches"), py::arg("targets") = std::vector<PyOperation>{},
          py::arg("max_blocks") = 8,
          "How the layout splits the program of these fetches and targets, before running it: "
          "each variable's, input's and fetch's blocks over the mesh, and each op's collectives "
          "with their bytes (and simulated times after a simulated run).")
      .def(
          "simulation_report",
          [](PySession& s) { return report_dict(s.session().simulation_report()); },
          "The last simulated run's report as a dict (the JSON of mtf-sim --json).")
      .def(
          "simulation_table",
          [](PySession& s, int max_ops) {
            return s.session().simulation_report().to_table(max_ops);
          },
          py::arg("max_ops") = 12)
      .def(
          "profile",
          [](PySession& s, int max_ops) { return s.session().profile().to_string(max_ops); },
          py::arg("max_ops") = 15, "Where the runs' time went (Session(profile=True)), as a table.")
      .def("reset_profile", [](PySession& s) { s.session().reset_profile(); })
      .def_property_readonly("process_rank",
                             [](PySession& s) {
                               const auto& t = s.session().config().process_transport;
                               return t ? t->rank() : 0;
                             })
      .def_property_readonly("process_count", [](PySession& s) {
        const auto& t = s.session().config().process_transport;
        return t ? t->size() : 1;
      });
  m.def(
      "process_transport_kind",
      [](const std::string& which) { return process_transport_kind(which); },
      py::arg("transport") = "auto",
      "What Session(transport=...) joins: tcp (under mtf-launch, srun or torchrun), mpi (under "
      "mpirun or srun --mpi=pmix) or none.");
}

}  // namespace mtf::python
