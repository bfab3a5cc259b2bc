#include "cli/mesh_flags.h"

#include <cstdio>
#include <set>

#include "mtf/auto_layout.h"
#include "mtf/errors.h"
#include "mtf/process_transport.h"

namespace mtf::cli {

void define_mesh_flags(Flags& flags, bool reproducible) {
  flags.define("mesh_shape", "", "mesh of processors, e.g. \"rows:2;cols:2\" (empty: one)");
  flags.define("layout", "",
               "layout rules, e.g. \"batch:rows;hidden:cols\", or auto (chosen by predicted step "
               "time)");
  flags.define("mesh_impl", "simd", "simd (a program per core) or placement (one controller)");
  flags.define("execution", "pool",
               "simd cores as fibers on one thread per CPU (pool), all on one thread (fibers), "
               "or a thread each (threads)");
  flags.define("reproducible", reproducible ? "true" : "false",
               "true: every mesh and layout gives the one-processor run's bits (sums over split "
               "dimensions gathered, fixed-order einsum kernel); false: BLAS speed, layouts "
               "agree to float rounding");
  flags.define("profile", "false",
               "true: time every op of every step and print where the time went (per op type "
               "and per op, the first step left out as warm-up)");
  flags.define("check_numerics", "false",
               "true: stop at the first NaN or infinity an op computes (a loss, a gradient, an "
               "update), naming the op, before any variable changes (ops run unfused)");
  flags.define("fuse", "true",
               "true: chains of elementwise ops run as one kernel each (the same bits); false: "
               "one kernel per op");
  flags.define("transport", "auto",
               "multi-process transport: auto (tcp under mtf-launch, mpi under mpirun), tcp, "
               "mpi, or none");
}

MeshConfig mesh_config_from_flags(const Flags& flags, std::string* transport_name) {
  MeshConfig mesh;
  const std::string impl = flags.str("mesh_impl");
  try {
    mesh.impl = parse_mesh_impl(impl);
  } catch (const ValueError& e) {
    throw ValueError(std::string("--") + e.what());
  }
  if (mesh.impl == MeshImpl::kSimulated)
    throw ValueError(
        "--mesh_impl simulated: the examples run simd or placement; mtf-sim simulates");
  try {
    mesh.execution = parse_rank_execution(flags.str("execution"));
  } catch (const ValueError& e) {
    throw ValueError(std::string("--execution: ") + e.what());
  }
  mesh.reproducible = flags.boolean("reproducible");
  mesh.profile = flags.boolean("profile");
  mesh.check_numerics = flags.boolean("check_numerics");
  mesh.fuse = flags.boolean("fuse");
  mesh.mesh_shape = MeshShape(flags.str("mesh_shape"));
  if (flags.str("layout") != "auto") mesh.layout = LayoutRules(flags.str("layout"));
  // Started by mtf-launch (or any launcher setting MTF_RANK etc.) or by
  // mpirun: this process is one rank of a multi-process job.
  try {
    mesh.process_transport = connect_process_transport(flags.str("transport"), transport_name);
  } catch (const ValueError& e) {
    throw ValueError(std::string("--transport: ") + e.what());
  }
  return mesh;
}

void resolve_auto_layout(const Flags& flags, MeshConfig& config, Graph& graph,
                         const TrainingStep& step) {
  if (flags.str("layout") != "auto") return;
  // This machine, roughly: one core per processor in a ring, memory and
  // message figures of an in-process run on a small server.
  const int64_t n = config.mesh_shape.size();
  AutoLayoutOptions o;
  o.topology = Topology();
  o.topology.name = "this machine (approximate)";
  o.topology.chips = {static_cast<int>(n), 1};
  o.topology.cores_per_chip = 1;
  o.topology.core_flops = 50e9;
  o.topology.core_memory = 16.0 * (1 << 30);
  o.topology.chip_memory_bandwidth = 10e9;
  o.topology.link_bandwidth = 5e9;
  o.topology.link_latency = 5e-6;
  o.simulate_top = 0;   // estimates only: cheap and the same on every rank
  o.time_budget = 1e9;  // no deadline: the same search on every rank
  const AutoLayoutResult r = auto_layout(graph, config.mesh_shape, step, o);
  std::printf("layout auto: the best of %lld layouts costed on %s\n%s",
              static_cast<long long>(r.evaluations), o.topology.name.c_str(), r.table(5).c_str());
  config.layout = r.rules;
}

void check_layout_dimensions(const MeshConfig& config, const Graph& graph) {
  std::set<std::string> names;
  for (const auto& op : graph.operations())
    for (const Tensor& t : op->outputs())
      for (const Dimension& d : t.shape()) names.insert(d.name);
  for (const auto& [dimension, axis] : config.layout.pairs()) {
    if (names.count(dimension)) continue;
    const std::string near =
        closest_name(dimension, std::vector<std::string>(names.begin(), names.end()));
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    throw LayoutError("--layout rule \"" + dimension + ":" + axis + "\" names dimension \"" +
                      dimension + "\", which no tensor of this model has" +
                      (near.empty() ? "" : "; did you mean \"" + near + "\"?") +
                      " (its dimensions: " + known + ")");
  }
}

void check_microbatches(int64_t batch, int64_t parts, const MeshConfig& mesh) {
  const auto axis = mesh.layout.mesh_axis_for("batch", mesh.mesh_shape);
  if (!axis || parts < 1) return;
  const int64_t split = mesh.mesh_shape.dims()[*axis].size;
  const int64_t part = batch / parts;
  if (part % split != 0) {
    throw ValueError("--microbatches " + std::to_string(parts) + " leaves " + std::to_string(part) +
                     " rows per part, which --layout splits over mesh dimension \"" +
                     mesh.mesh_shape.dims()[*axis].name + "\" of " + std::to_string(split) +
                     ": use fewer microbatches or a larger --batch");
  }
}

std::string describe_mesh(const MeshConfig& config, const std::string& transport_name) {
  std::string where;
  if (config.process_transport) {
    where = "rank " + std::to_string(config.process_transport->rank()) + " of " +
            std::to_string(config.process_transport->size()) + " processes over " + transport_name;
    const std::string links = config.process_transport->describe_links();
    if (!links.empty()) where += " (" + links + ")";
  } else {
    where = config.impl == MeshImpl::kSimd ? "simd" : "placement";
  }
  return "mesh: " +
         (config.mesh_shape.size() > 1 ? config.mesh_shape.to_string() : "one processor") + " (" +
         std::to_string(config.mesh_shape.size()) + " processors), layout: \"" +
         config.layout.to_string() + "\", " + where + (config.reproducible ? ", reproducible" : "");
}

}  // namespace mtf::cli
