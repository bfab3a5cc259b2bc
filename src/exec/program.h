// program.h — a per-processor program: the explicit list of steps one
// processor executes for a run, with the slots (tensor values) each reads and
// writes, and when each slot can be freed.
//
// lower_single_processor() builds it for one processor (every slice is the
// whole tensor). Mesh implementations will build the same structure with
// collective steps inserted; execution, printing and cost counters work on it
// unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/graph.h"

namespace mtf {

struct Step {
  const Operation* op = nullptr;
  std::vector<int> input_slots;
  std::vector<int> output_slots;  // -1 for outputs nobody reads
  std::vector<Shape> output_slice_shapes;
  std::vector<std::vector<int64_t>> output_slice_offsets;
  std::vector<int> free_after;  // slots whose last reader is this step
  double flops = 0;
};

struct Program {
  std::vector<Step> steps;
  int num_slots = 0;
  std::vector<int> fetch_slots;
  // Placeholders the program reads (their ops), for feed validation.
  std::vector<const Operation*> placeholders;
  double total_flops() const;
  std::string to_string() const;
};

// Only the ops that fetches and targets depend on, in graph order (which is
// topological: an op's inputs exist before it). Throws ValueError when a
// target is not an assignment op of this graph or a fetch is invalid.
Program lower_single_processor(const Graph& graph, const std::vector<Tensor>& fetches,
                               const std::vector<const Operation*>& targets);

}  // namespace mtf
