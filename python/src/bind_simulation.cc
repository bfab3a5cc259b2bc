// bind_simulation.cc — the torus simulator and automatic layouts from
// Python: any graph on any topology preset or machine file, reports as
// dicts (the JSON mtf-sim --json prints), auto_layout's ranking as a list of
// dicts.
#include <fstream>

#include "array_convert.h"
#include "handles.h"
#include "interruptible.h"

namespace mtf::python {

py::dict report_dict(const SimReport& report) {
  return py::module_::import("json").attr("loads")(report.to_json());
}

namespace {

py::dict candidate_dict(const LayoutCandidate& c) {
  py::dict d;
  d["mesh_shape"] = c.mesh.to_string();
  d["layout"] = c.rules.to_string();
  d["step_time"] = c.step_time;
  d["estimated_step_time"] = c.estimated_step_time;
  d["compute"] = c.compute;
  d["communication"] = c.communication;
  d["peak_memory"] = c.peak_memory;
  d["fits"] = c.fits;
  d["simulated"] = c.simulated;
  return d;
}

std::vector<Operation*> ops_of(const py::object& targets) {
  std::vector<Operation*> ops;
  if (targets.is_none()) return ops;
  for (py::handle h : targets) ops.push_back(h.cast<const PyOperation&>().op);
  return ops;
}

}  // namespace

// A preset name or a Topology, then a machine file's `key = value` lines,
// then overrides ("key=value,...").
Topology topology_of(const py::handle& topology, const std::string& machine_file,
                     const std::string& overrides) {
  Topology t = py::isinstance<Topology>(topology) ? topology.cast<Topology>()
                                                  : Topology::preset(topology.cast<std::string>());
  if (!machine_file.empty()) t.load_file(machine_file);
  t.apply_overrides(overrides);
  t.validate();
  return t;
}

SimOptions sim_options_of(const py::handle& topology, const std::string& machine_file,
                          const std::string& overrides, const std::string& mode,
                          const std::string& trace_path, const std::vector<int>& physical_order) {
  SimOptions o;
  o.topology = topology_of(topology, machine_file, overrides);
  if (mode != "functional" && mode != "cost") {
    throw ValueError("the simulation mode must be cost or functional, not \"" + mode + "\"");
  }
  o.mode = mode == "cost" ? SimMode::kCostOnly : SimMode::kFunctional;
  o.trace_path = trace_path;
  o.physical_order = physical_order;
  return o;
}

namespace {

// mtf.Topology: a machine the simulator runs on.
void bind_topology(py::module_& m) {
  py::class_<Topology>(
      m, "Topology",
      "A machine: chips in a torus, or nodes of devices on a switched network; speeds.")
      .def(py::init<>())
      .def_static("preset", &Topology::preset, py::arg("name"))
      .def_static("preset_names", &Topology::preset_names)
      .def("set", &Topology::set, py::arg("key"), py::arg("value"))
      .def("apply_overrides", &Topology::apply_overrides, py::arg("spec"))
      .def("load_file", &Topology::load_file, py::arg("path"))
      .def("validate", &Topology::validate)
      .def_readwrite("name", &Topology::name)
      .def_readwrite("chips", &Topology::chips)
      .def_readwrite("wraparound", &Topology::wraparound)
      .def_readwrite("cores_per_chip", &Topology::cores_per_chip)
      .def_readwrite("core_flops", &Topology::core_flops)
      .def_readwrite("core_memory", &Topology::core_memory)
      .def_readwrite("chip_memory_bandwidth", &Topology::chip_memory_bandwidth)
      .def_readwrite("link_bandwidth", &Topology::link_bandwidth)
      .def_readwrite("link_latency", &Topology::link_latency)
      .def_readwrite("core_link_bandwidth", &Topology::core_link_bandwidth)
      .def_readwrite("core_link_latency", &Topology::core_link_latency)
      .def_readwrite("nodes", &Topology::nodes)
      .def_readwrite("devices_per_node", &Topology::devices_per_node)
      .def_readwrite("node_link_bandwidth", &Topology::node_link_bandwidth)
      .def_readwrite("node_link_latency", &Topology::node_link_latency)
      .def_readwrite("nics_per_node", &Topology::nics_per_node)
      .def_readwrite("nic_bandwidth", &Topology::nic_bandwidth)
      .def_readwrite("network_latency", &Topology::network_latency)
      .def_readwrite("nodes_per_leaf", &Topology::nodes_per_leaf)
      .def_readwrite("oversubscription", &Topology::oversubscription)
      // A host (mtf-sim --calibrate's machine file): the other figures
      // through set(key, value).
      .def_readwrite("host_cpus", &Topology::host_cpus)
      .def_property_readonly("host_ranks", &Topology::host_ranks_name)
      .def("to_file", &Topology::to_file)
      .def_static("host_machine_path", &Topology::host_machine_path)
      .def_property_readonly("network",
                             [](const Topology& t) {
                               return t.network == Topology::Network::kTorus ? "torus" : "switched";
                             })
      .def_property_readonly("node_fabric",
                             [](const Topology& t) {
                               return t.node_fabric == Topology::NodeFabric::kSwitch ? "switch"
                                                                                     : "ring";
                             })
      .def(
          "flops",
          [](const Topology& t, const std::string& dtype) {
            DType d;
            if (dtype_from_name(dtype, &d)) return t.flops(d);
            throw ValueError("Topology.flops: unknown dtype \"" + dtype +
                             "\"; use float32, bfloat16 or int32");
          },
          py::arg("dtype"))
      .def_readonly("sources", &Topology::sources)
      .def(
          "core_mapping",
          [](const Topology& t, const std::string& mesh_shape) {
            return CoreMapping::automatic(MeshShape(mesh_shape), t).physical;
          },
          py::arg("mesh_shape"),
          "The physical core of each logical processor (a list by processor number) when the "
          "mesh \"rows:8;cols:16\" is laid onto this machine as the simulator lays it: each "
          "axis's ring through neighbouring chips where it can (Mesh TensorFlow's "
          "auto_logical_to_physical_tpu).")
      .def_property_readonly("num_cores", &Topology::num_cores)
      .def_property_readonly("num_chips", &Topology::num_chips)
      .def("__repr__", &Topology::to_string);
}

// Mesh TensorFlow's spec: [(name, tile shape or None), ...].
std::vector<HierarchicalTiling::Axis> tiling_spec(const py::object& spec) {
  std::vector<HierarchicalTiling::Axis> axes;
  for (py::handle item : spec) {
    const auto pair = item.cast<py::tuple>();
    if (pair.size() != 2) {
      throw ValueError("HierarchicalTiling: each spec entry is (name, tile shape or None), not " +
                       py::repr(item).cast<std::string>());
    }
    HierarchicalTiling::Axis a{pair[0].cast<std::string>(), {}};
    if (!pair[1].is_none()) a.tile = pair[1].cast<std::vector<int>>();
    axes.push_back(std::move(a));
  }
  return axes;
}

void bind_hierarchical_tiling(py::module_& m) {
  py::class_<HierarchicalTiling>(
      m, "HierarchicalTiling",
      "Mesh TensorFlow's HierarchicalTiling: a logical mesh given as nested tiles of a physical "
      "shape. spec lists (axis name, tile shape) outermost first; one axis may have None (what "
      "the others leave). logical_to_physical[pnum] is the row-major index in physical_shape "
      "of logical processor pnum (a simulate() physical_order when physical_shape is the "
      "chips' grid then the cores per chip).")
      .def(py::init([](const py::object& spec, const std::vector<int>& physical_shape) {
             return HierarchicalTiling(tiling_spec(spec), physical_shape);
           }),
           py::arg("spec"), py::arg("physical_shape"))
      .def_property_readonly("mesh_shape",
                             [](const HierarchicalTiling& t) { return t.mesh_shape.dims(); })
      .def_readonly("logical_to_physical", &HierarchicalTiling::logical_to_physical)
      .def_readonly("physical_shape", &HierarchicalTiling::physical_shape)
      .def_static(
          "spec_to_mesh_shape",
          [](const py::object& spec, int64_t num_processors) {
            return HierarchicalTiling::spec_to_mesh_shape(tiling_spec(spec), num_processors).dims();
          },
          py::arg("spec"), py::arg("num_processors"));
}

}  // namespace

void bind_simulation(py::module_& m) {
  bind_topology(m);
  bind_hierarchical_tiling(m);
  m.def(
      "simulate",
      [](const std::shared_ptr<Graph>& graph, const std::vector<Tensor>& fetches,
         const py::object& targets, const std::string& mesh_shape, const std::string& layout,
         const py::object& topology, const std::string& machine_file,
         const std::string& topology_overrides, const std::string& mode,
         const std::string& trace_path, const std::vector<int>& physical_order,
         const py::object& feed_dict, int64_t microbatches, const py::object& apply_targets) {
        graph_arg(graph, "mtf.simulate");
        if (microbatches < 1)
          throw ValueError("simulate: microbatches must be at least 1, not " +
                           std::to_string(microbatches));
        MeshConfig c;
        c.mesh_shape = MeshShape(mesh_shape);
        c.layout = LayoutRules(layout);
        c.impl = MeshImpl::kSimulated;
        c.sim = sim_options_of(topology, machine_file, topology_overrides, mode, trace_path,
                               physical_order);
        const Feeds feeds = feeds_of(feed_dict);
        const TrainingStep step{fetches, ops_of(targets), microbatches, ops_of(apply_targets)};
        const SimReport sim =
            interruptible([&] { return simulate_training_step(*graph, c, step, feeds); });
        py::dict report = report_dict(sim);
        if (!trace_path.empty()) report["trace_path"] = trace_path;
        return report;
      },
      py::arg("graph"), py::arg("fetches"), py::arg("targets") = py::none(), py::kw_only(),
      py::arg("mesh_shape"), py::arg("layout") = "", py::arg("topology") = "tpu-v2-512",
      py::arg("machine_file") = "", py::arg("topology_overrides") = "", py::arg("mode") = "cost",
      py::arg("trace_path") = "", py::arg("physical_order") = std::vector<int>{},
      py::arg("feed_dict") = py::none(), py::arg("microbatches") = 1,
      py::arg("apply_targets") = py::none(),
      "One step of the program computing fetches and running targets, simulated on the "
      "machine (mode cost: sizes and clocks only; functional: real values, placeholders fed "
      "from feed_dict); returns the report as a dict (step_time in seconds, per-core compute, "
      "communication and memory, the op table). trace_path: also write a Chrome trace. "
      "Gradient accumulation: the step runs `microbatches` times (each with feed_dict), then "
      "apply_targets once; the report sums their times (runs: how many) and keeps the "
      "largest peak memory.");

  m.def(
      "auto_layout",
      [](const std::shared_ptr<Graph>& graph, const std::vector<Tensor>& fetches,
         const py::object& targets, const py::object& mesh_shape, const py::object& topology,
         const std::string& machine_file, const std::string& topology_overrides,
         double memory_limit, double time_budget, const std::string& fixed, int beam_width,
         int simulate_top, int max_dims, int64_t microbatches, const py::object& apply_targets) {
        graph_arg(graph, "mtf.auto_layout");
        AutoLayoutOptions o;
        o.topology = topology_of(topology, machine_file, topology_overrides);
        o.memory_limit = memory_limit;
        o.time_budget = time_budget;
        o.fixed = LayoutRules(fixed);
        o.beam_width = beam_width;
        o.simulate_top = simulate_top;
        o.max_dims = max_dims;
        const TrainingStep step{fetches, ops_of(targets), microbatches, ops_of(apply_targets)};
        AutoLayoutResult r = interruptible([&] {
          if (mesh_shape.is_none())
            return auto_layout_and_mesh_shape(*graph, o.topology.num_cores(), step, o);
          return auto_layout(*graph, MeshShape(mesh_shape.cast<std::string>()), step, o);
        });
        py::dict d;
        d["mesh_shape"] = r.mesh.to_string();
        d["layout"] = r.rules.to_string();
        py::list ranked;
        for (const LayoutCandidate& c : r.ranked) ranked.append(candidate_dict(c));
        d["ranked"] = ranked;
        d["evaluations"] = r.evaluations;
        d["space"] = r.space;
        d["exhaustive"] = r.exhaustive;
        d["cut_short"] = r.cut_short;
        d["seconds"] = r.seconds;
        d["runs"] = r.runs;
        d["table"] = r.table(10);
        return d;
      },
      py::arg("graph"), py::arg("fetches"), py::arg("targets") = py::none(), py::kw_only(),
      py::arg("mesh_shape") = py::none(), py::arg("topology") = "tpu-v2-512",
      py::arg("machine_file") = "", py::arg("topology_overrides") = "",
      py::arg("memory_limit") = 0.0, py::arg("time_budget") = 30.0, py::arg("fixed") = "",
      py::arg("beam_width") = 8, py::arg("simulate_top") = 3, py::arg("max_dims") = 3,
      py::arg("microbatches") = 1, py::arg("apply_targets") = py::none(),
      "The layout rules (and, without mesh_shape, the mesh shape over the topology's cores) "
      "with the least predicted step time that fit each core's memory: a dict with "
      "mesh_shape, layout, ranked (a list of dicts, best first) and the search's figures. "
      "Gradient accumulation: a step is `microbatches` runs of fetches and targets, then one "
      "of apply_targets (GradientAccumulation's accumulate_ops and apply_ops).");
}

}  // namespace mtf::python
