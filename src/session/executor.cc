#include "session/executor.h"

#include "session/local_executors.h"
#include "session/simulated_executor.h"

namespace mtf::detail {

std::unique_ptr<Executor> make_executor(const Graph& graph, MeshConfig& config) {
  if (config.impl == MeshImpl::kSimulated && !config.process_transport)
    return make_simulated_executor(graph, config);
  return make_local_executor(config);
}

}  // namespace mtf::detail
