// The executors that run programs on this machine's CPUs: one processor,
// SIMD cores as fibers or threads of this process, a placement controller,
// and one rank of a multi-process job.
#include "session/local_executors.h"

#include "core/check.h"
#include "kernels/blas_threads.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "placement/placement_executor.h"
#include "simd/simd_executor.h"

namespace mtf::detail {

CompileOptions Executor::compile_options(const MeshConfig& config) const {
  CompileOptions o;
  o.reproducible = config.reproducible;
  o.fuse = config.fuse;
  return o;
}

namespace {

StepHooks* first_hooks(const std::vector<StepHooks*>& hooks) {
  return hooks.empty() ? nullptr : hooks[0];
}

std::vector<int64_t> all_processors(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t p = 0; p < n; ++p) v.push_back(p);
  return v;
}

class OneProcessorExecutor : public Executor {
 public:
  OneProcessorExecutor() { local_ = {0}; }
  void run(const Program& program, CoreRuns& runs, const std::vector<StepHooks*>& hooks) override {
    run_core(program, 0, nullptr, runs.states[0], &runs.fetched[0], first_hooks(hooks));
  }
};

class SimdExecutor : public Executor {
 public:
  SimdExecutor(int64_t processors, RankExecution execution, std::chrono::milliseconds timeout)
      : execution_(execution), timeout_(timeout) {
    local_ = all_processors(processors);
  }
  bool watches_each_processor() const override { return true; }
  void run(const Program& program, CoreRuns& runs, const std::vector<StepHooks*>& hooks) override {
    const int n = static_cast<int>(local_.size());
    kernels::BlasThreadsShare blas(rank_threads(n, execution_));
    run_in_process(
        n,
        [&](Transport& t) {
          const size_t r = static_cast<size_t>(t.rank());
          run_core(program, t.rank(), &t, runs.states[r], &runs.fetched[r],
                   r < hooks.size() ? hooks[r] : nullptr);
        },
        execution_, timeout_);
  }

 private:
  const RankExecution execution_;
  const std::chrono::milliseconds timeout_;
};

class PlacementExecutor : public Executor {
 public:
  explicit PlacementExecutor(int64_t processors) { local_ = all_processors(processors); }
  void run(const Program& program, CoreRuns& runs, const std::vector<StepHooks*>& hooks) override {
    run_placement(program, runs.states, &runs.fetched, first_hooks(hooks));
  }
};

// This process is one rank of a job of mesh-size processes.
class ProcessExecutor : public Executor {
 public:
  explicit ProcessExecutor(std::shared_ptr<Transport> transport)
      : transport_(std::move(transport)) {
    local_ = {transport_->rank()};
  }
  Transport* process_transport() const override { return transport_.get(); }
  void run(const Program& program, CoreRuns& runs, const std::vector<StepHooks*>& hooks) override {
    // The job's ranks on this machine compute at once, as a pool's would,
    // and share BLAS's threads the same way (so the numbers match the
    // in-process run bit for bit: OpenBLAS's results depend on its thread
    // count).
    Transport& t = *transport_;
    kernels::BlasThreadsShare blas(rank_threads(t.local_size(), RankExecution::kPool));
    run_core(program, t.rank(), &t, runs.states[t.rank()], &runs.fetched[t.rank()],
             first_hooks(hooks));
  }

 private:
  const std::shared_ptr<Transport> transport_;
};

}  // namespace

std::unique_ptr<Executor> make_local_executor(const MeshConfig& config) {
  const int64_t n = config.mesh_shape.size();
  if (const std::shared_ptr<Transport>& t = config.process_transport) {
    if (t->size() != n) {
      throw LayoutError(str_cat("mesh ", config.mesh_shape.to_string(), " has ", n,
                                " processors but the job has ", t->size(),
                                " processes; run one process per processor"));
    }
    if (config.impl != MeshImpl::kSimd)
      throw ValueError("a multi-process Session runs the SIMD mesh implementation only");
    return std::make_unique<ProcessExecutor>(t);
  }
  if (n == 1) return std::make_unique<OneProcessorExecutor>();
  if (config.impl == MeshImpl::kSimd)
    return std::make_unique<SimdExecutor>(n, config.execution, config.timeout);
  return std::make_unique<PlacementExecutor>(n);
}

}  // namespace mtf::detail
