// simulated_executor.h — the executor of MeshImpl::kSimulated (see
// executor.h): runs on the simulator's machine and keeps the last run's
// report. On a one-node host machine (host_cpus > 0) it first sets
// config.sim's devices per node to the mesh's ranks.
#pragma once

#include <memory>

#include "session/executor.h"

namespace mtf::detail {

std::unique_ptr<Executor> make_simulated_executor(const Graph& graph, MeshConfig& config);

}  // namespace mtf::detail
