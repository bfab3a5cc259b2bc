// session_impl.h — what a Session is made of: the compiled programs
// (ProgramCache), the variables (VariableStore), and the executor chosen
// from its MeshConfig; run() joins them: compile or reuse the program,
// check feeds, run, commit assignments, assemble fetches. Internal.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/step_profile.h"
#include "lowering/compile.h"
#include "mtf/session.h"
#include "session/executor.h"
#include "session/slice_assembly.h"
#include "session/variable_store.h"

namespace mtf::detail {

class SessionImpl {
 public:
  SessionImpl(Graph& graph, MeshConfig config);

  std::vector<HostTensor> run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                              const std::vector<Operation*>& targets);
  // The compiled program of these fetches and targets (cached). ValueError
  // for a target that is not an assignment.
  const Program& program(const std::vector<Tensor>& fetches,
                         const std::vector<Operation*>& targets);

  const Graph& graph() const { return graph_; }
  const MeshConfig& config() const { return config_; }
  Executor& executor() { return *executor_; }
  VariableStore& variables() { return variables_; }
  SliceAssembler& assembler() { return assembler_; }
  // ValueError naming `what` in a cost-only simulation (it holds no values).
  void require_values(const char* what) const;

  uint64_t run_counter = 0;
  int64_t last_fed_bytes = 0;
  std::map<const Program*, exec::ProgramTimes> profile_times;  // MeshConfig::profile

 private:
  Graph& graph_;
  MeshConfig config_;
  std::unique_ptr<Executor> executor_;
  ProgramCache programs_;
  VariableStore variables_;
  SliceAssembler assembler_;
};

}  // namespace mtf::detail
