// The executor of MeshImpl::kSimulated: the SIMD program on the simulator's
// machine, each core a fiber on simulated time. Before a program's first
// run it checks the program's peak memory per core against the machine.
#include "session/simulated_executor.h"

#include <map>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/sim.h"
#include "sim/engine.h"
#include "sim/memory.h"
#include "simd/simd_executor.h"

namespace mtf::detail {
namespace {

class SimulatedExecutor : public Executor {
 public:
  SimulatedExecutor(const Graph& graph, const MeshConfig& config)
      : graph_(graph),
        mesh_(config.mesh_shape),
        layout_(config.layout),
        options_(*config.sim),
        engine_(options_, mesh_) {
    for (int64_t p = 0; p < mesh_.size(); ++p) local_.push_back(p);
  }

  // A simulated host runs (and costs) the program its executor would; a
  // torus or GPU machine is priced op by op.
  CompileOptions compile_options(const MeshConfig& config) const override {
    CompileOptions o = Executor::compile_options(config);
    o.executable = options_.topology.host_cpus > 0;
    return o;
  }
  bool holds_values() const override { return options_.mode != SimMode::kCostOnly; }
  bool profiles() const override { return false; }  // steps take virtual time
  const SimReport* report() const override { return report_.get(); }

  void run(const Program& program, CoreRuns& runs, const std::vector<StepHooks*>&) override {
    // Per program, once: layouts do not change between runs.
    auto it = memory_.find(&program);
    if (it == memory_.end()) it = memory_.emplace(&program, check_memory(program)).first;
    const sim::MemoryEstimate& memory = it->second;
    SimReport rep = engine_.run(program, [&](Transport& t, StepHooks& hooks) {
      // The engine may run a cost-only step twice: each time afresh.
      runs.states[t.rank()].pending_assignments.clear();
      runs.fetched[t.rank()].clear();
      run_core(program, t.rank(), &t, runs.states[t.rank()], &runs.fetched[t.rank()], &hooks);
    });
    rep.layout = layout_.to_string();
    rep.peak_memory = memory.peak;
    rep.peak_memory_at = memory.peak_at;
    rep.peak_activation_memory = memory.activations;
    report_ = std::make_unique<SimReport>(std::move(rep));
  }

 private:
  // Peak memory per core of `program` on the simulated machine; throws
  // OutOfMemoryError when it exceeds the core's memory.
  sim::MemoryEstimate check_memory(const Program& program) const {
    sim::MemoryEstimate est =
        sim::estimate_memory(program, sim::variable_bytes(graph_, layout_, mesh_));
    const double limit = options_.topology.core_memory;
    if (static_cast<double>(est.peak) > limit) {
      throw OutOfMemoryError(
          str_cat("layout \"", layout_.to_string(), "\" on mesh ", mesh_.to_string(),
                  " does not fit topology \"", options_.topology.name, "\": ", est.describe(),
                  "; each core has ", limit / (1 << 30),
                  " GiB. Split the largest tensors over more mesh dimensions, or use more cores"));
    }
    return est;
  }

  const Graph& graph_;
  const MeshShape mesh_;
  const LayoutRules layout_;
  const SimOptions options_;
  sim::Engine engine_;
  std::map<const Program*, sim::MemoryEstimate> memory_;  // by cached program
  std::unique_ptr<SimReport> report_;
};

}  // namespace

std::unique_ptr<Executor> make_simulated_executor(const Graph& graph, MeshConfig& config) {
  // A host's devices are the mesh's ranks, however many the file says.
  Topology& topo = config.sim->topology;
  if (topo.host_cpus > 0 && topo.nodes == 1)
    topo.devices_per_node = static_cast<int>(config.mesh_shape.size()) / topo.cores_per_chip;
  return std::make_unique<SimulatedExecutor>(graph, config);
}

}  // namespace mtf::detail
