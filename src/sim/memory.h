// memory.h — peak memory per core of a per-core program, from its layouts
// alone (no tensors needed): persistent variables, plus slices live between
// their producing step and their last reader, plus collective buffers and
// new variable values held until the run ends. Every core holds slices of
// the same shapes, so one estimate serves all. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lowering/program.h"

namespace mtf::sim {

struct MemoryEstimate {
  int64_t peak = 0;        // bytes per core
  int64_t persistent = 0;  // variables
  // At the peak: slices of the step's tensors and collective buffers (the
  // rest is variables and their new values).
  int64_t activations = 0;
  std::string peak_at;  // "op (step N)"
  // The largest tensors live at the peak: (description, bytes per core).
  std::vector<std::pair<std::string, int64_t>> largest;
  std::string describe(int top = 5) const;
};

// (name, bytes per core) of every variable of `graph` under `rules` on
// `mesh`; LayoutError when a variable's layout is invalid.
std::vector<std::pair<std::string, int64_t>> variable_bytes(const Graph& graph,
                                                            const LayoutRules& rules,
                                                            const MeshShape& mesh);

// `variables`: (name, bytes per core) of every variable the session holds.
MemoryEstimate estimate_memory(const Program& program,
                               const std::vector<std::pair<std::string, int64_t>>& variables);

}  // namespace mtf::sim
