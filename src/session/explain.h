// explain.h — the text of Session::explain, from a lowered program: every
// variable's, input's and fetch's blocks over the mesh (sharding_picture),
// then each op's collectives with their bytes per processor, and, given the
// last simulated run's report, the bytes a core sent in the op and its time.
// Internal.
#pragma once

#include <string>
#include <vector>

#include "lowering/program.h"
#include "mtf/session.h"

namespace mtf::detail {

std::string explain_program(const Program& program, const Graph& graph, const MeshConfig& config,
                            const std::vector<Tensor>& fetches, const SimReport* report,
                            int max_blocks);

}  // namespace mtf::detail
