// local_executors.h — the executors on this machine's own CPUs (see
// executor.h): one rank of a multi-process job when config has a process
// transport, else one processor, SIMD cores in this process, or placement.
#pragma once

#include <memory>

#include "session/executor.h"

namespace mtf::detail {

std::unique_ptr<Executor> make_local_executor(const MeshConfig& config);

}  // namespace mtf::detail
