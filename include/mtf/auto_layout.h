// mtf/auto_layout.h — choosing layout rules (and a mesh shape) by predicted
// step time under each core's memory.
//
// Every candidate layout is lowered to the per-core program a run would
// execute and costed on the simulated machine: compute steps by the same
// roofline as the simulator, collectives by the step counts of the
// algorithms the executors run over each mesh axis's ring (with links that
// several rings cross shared between them), peak memory per core by the
// simulator's estimate. Layouts that do not lower (a dimension not
// divisible by its mesh dimension, two dimensions of one tensor on one mesh
// dimension) are never chosen. The search is exhaustive when the space is
// small, otherwise a beam search over tensor dimensions by size followed by
// local improvement; evaluations are cached; results are deterministic
// unless the time budget cuts the search short (the result says so). Then
// the leader is verified by the cost-only simulation, again and again while
// a layout known only by its estimate leads (up to simulate_top
// simulations, as time allows): the times of simulated candidates are the
// simulator's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mtf/graph.h"
#include "mtf/layout.h"
#include "mtf/session.h"
#include "mtf/sim.h"

namespace mtf {

struct AutoLayoutOptions {
  // The machine; its core count must equal the mesh's. Default: a TPU v2
  // pod of 512 cores; auto_layout_and_mesh_shape needs one of num_cores.
  Topology topology = Topology::preset("tpu-v2-512");
  double memory_limit = 0;          // bytes per core; 0: the topology's core memory
  double time_budget = 30;          // seconds for the whole search, simulations included
  LayoutRules fixed;                // rules kept as given; their tensor dimensions are not searched
  int64_t exhaustive_limit = 4096;  // search every layout when there are at most this many
  int beam_width = 8;
  int simulate_top = 3;  // at most this many cost-only simulations verify the leader
  // auto_layout_and_mesh_shape: mesh shapes of 1 to max_dims dimensions
  // (1, 2 or 3; Mesh TensorFlow's max_mesh_shape_dimensions).
  int max_dims = 3;
};

// What one training step runs, as the search costs it: `runs` runs
// computing `fetches` and running `targets` (with gradient accumulation, one
// per microbatch of a graph built at the microbatch's size), then one run of
// `apply` (the accumulated update; empty: none). The step's time is their
// sum, its memory per core the larger peak.
struct TrainingStep {
  TrainingStep(std::vector<Tensor> fetches, std::vector<Operation*> targets, int64_t runs = 1,
               std::vector<Operation*> apply = {})
      : fetches(std::move(fetches)),
        targets(std::move(targets)),
        runs(runs),
        apply(std::move(apply)) {}
  std::vector<Tensor> fetches;
  std::vector<Operation*> targets;
  int64_t runs = 1;
  std::vector<Operation*> apply;
};

struct LayoutCandidate {
  MeshShape mesh;
  LayoutRules rules;
  double step_time = 0;            // seconds, predicted (simulated when `simulated`)
  double estimated_step_time = 0;  // the cost model's figure
  double compute = 0, communication = 0;
  int64_t peak_memory = 0;  // bytes per core
  bool fits = false;
  bool simulated = false;
};

struct AutoLayoutResult {
  MeshShape mesh;
  LayoutRules rules;
  std::vector<LayoutCandidate> ranked;  // best first (fitting ones first)
  int64_t evaluations = 0;              // distinct layouts costed
  int64_t space = 0;                    // layouts in the search space (per mesh shape, summed)
  bool exhaustive = false;
  bool cut_short = false;  // the time budget ended the search (then results depend on speed)
  double seconds = 0;
  int64_t runs = 1;         // the step's runs (TrainingStep::runs), update run not counted
  bool update_run = false;  // whether the step ends with TrainingStep::apply
  // The top `rows` candidates as a table: rules, step time, compute and
  // communication share, peak memory per core.
  std::string table(int rows = 10) const;
  // The choice, the search's figures and the top `rows` candidates as one
  // JSON object ("ranked": mesh, layout, step_time and estimated_step_time in
  // seconds, compute and communication in seconds, peak_memory in bytes per
  // core, fits, simulated).
  std::string to_json(int rows = 10) const;
};

// The best layout rules for `mesh` and the program computing `fetches` and
// running `targets`. Throws OutOfMemoryError, naming the largest tensors and
// their bytes per core, when no layout fits the memory limit; LayoutError
// when the topology's core count is not the mesh's.
AutoLayoutResult auto_layout(Graph& graph, const MeshShape& mesh,
                             const std::vector<Tensor>& fetches,
                             const std::vector<Operation*>& targets,
                             const AutoLayoutOptions& options = {});

// The same over the mesh shapes of `num_cores` processors in 1 to
// options.max_dims dimensions (named "x", "y", "z", sizes non-increasing),
// with the time budget shared between them. ValueError unless max_dims is
// 1, 2 or 3.
AutoLayoutResult auto_layout_and_mesh_shape(Graph& graph, int64_t num_cores,
                                            const std::vector<Tensor>& fetches,
                                            const std::vector<Operation*>& targets,
                                            const AutoLayoutOptions& options = {});

// One training step simulated on `config` (a simulated mesh): its runs,
// each with `feeds` (in cost-only mode one simulation stands for all), then
// the update run, reported as one (SimReport::followed_by). ValueError
// when step.runs < 1.
SimReport simulate_training_step(Graph& graph, const MeshConfig& config, const TrainingStep& step,
                                 const Feeds& feeds = {});

// Both for a step of several runs (gradient accumulation). ValueError when
// step.runs < 1.
AutoLayoutResult auto_layout(Graph& graph, const MeshShape& mesh, const TrainingStep& step,
                             const AutoLayoutOptions& options = {});
AutoLayoutResult auto_layout_and_mesh_shape(Graph& graph, int64_t num_cores,
                                            const TrainingStep& step,
                                            const AutoLayoutOptions& options = {});

}  // namespace mtf
