// executor.h — how a Session's programs run, chosen once when the Session is
// made (make_executor): on a simulated machine, as one rank of a job of
// processes, on one processor, as SIMD cores in this process, or as one
// placement controller. Every executor runs the same compiled program on the
// processors this process holds and leaves each one's fetched slices and
// pending assignments in a CoreRuns; the Session commits and assembles them.
// Internal to the session layer.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/step_hooks.h"
#include "kernels/kernel_context.h"
#include "lowering/compile.h"
#include "mtf/session.h"

namespace mtf::detail {

// One run's per-processor state, indexed by processor number; the entries of
// processors this process does not hold stay empty.
struct CoreRuns {
  explicit CoreRuns(int64_t processors)
      : states(static_cast<size_t>(processors)), fetched(static_cast<size_t>(processors)) {}
  std::vector<RunState> states;
  std::vector<std::vector<HostTensor>> fetched;  // per processor, one slice per fetch
};

class Executor {
 public:
  virtual ~Executor() = default;

  // The processors whose slices this process holds and runs, ascending.
  const std::vector<int64_t>& local_processors() const { return local_; }
  // How programs must be compiled for this executor.
  virtual CompileOptions compile_options(const MeshConfig& config) const;
  // False for a cost-only simulation: no values, no feeds, empty fetches.
  virtual bool holds_values() const { return true; }
  // Whether step times mean wall-clock time (MeshConfig::profile).
  virtual bool profiles() const { return true; }
  // Whether run() watches every local processor's steps (SIMD processors
  // of this process), or only the first's.
  virtual bool watches_each_processor() const { return false; }
  // The transport joining this process to the job's other ranks, or null.
  virtual Transport* process_transport() const { return nullptr; }
  // The last simulated run's report, or null.
  virtual const SimReport* report() const { return nullptr; }

  // Runs `program` once on every local processor p with runs.states[p],
  // filling runs.fetched[p]. `hooks` (step timers; empty: none): hooks[i]
  // watches the steps of local_processors()[i], the first only unless
  // watches_each_processor().
  virtual void run(const Program& program, CoreRuns& runs,
                   const std::vector<StepHooks*>& hooks) = 0;

 protected:
  std::vector<int64_t> local_;
};

// The executor `config` asks for. Adjusts config.sim's host topology to
// the mesh (one device per rank). LayoutError when a process transport's
// job size differs from the mesh; ValueError for a multi-process
// non-SIMD mesh; the simulator's errors for a bad machine.
std::unique_ptr<Executor> make_executor(const Graph& graph, MeshConfig& config);

}  // namespace mtf::detail
