// compile.h — from a graph to the program an executor runs, in one call:
// lower() for the mesh and layout rules, then (for executors that run it)
// the fusion passes and the kernels' plans. ProgramCache keeps one compiled
// program per (fetches, targets) set, as a Session needs it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "lowering/program.h"

namespace mtf {

struct CompileOptions {
  // Every layout gives one processor's bits: sums over split dimensions
  // gather the dimension (lower()'s whole_sums), and kernels plan their
  // fixed-order variants. Off: layouts agree to float rounding.
  bool reproducible = false;
  // Chains of elementwise ops become fused steps; outside reproducible mode
  // an SGD-style update also adds its gradient's contraction straight into
  // the weight. Off: one step per op, for comparing.
  bool fuse = true;
  // Fusion and kernel plans are what an executor runs; a program that is
  // only priced (a simulated torus, whose timing model knows ops, not fused
  // steps) is lowered and nothing more.
  bool executable = true;
};

// Lowers what `fetches` and `targets` need for `mesh` under `rules` and
// prepares it as `options` say. LayoutError / ValueError as lower().
Program compile(const Graph& graph, const std::vector<Tensor>& fetches,
                const std::vector<const Operation*>& targets, const MeshShape& mesh,
                const LayoutRules& rules, const CompileOptions& options);

// One compiled program per (fetches, targets) set. Programs stay at their
// address for the cache's life (callers key their own caches by them).
// Not thread-safe.
class ProgramCache {
 public:
  ProgramCache(const Graph& graph, MeshShape mesh, LayoutRules rules, CompileOptions options);
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // REQUIRES: every target is an assignment or null (the caller's message
  // names its own call).
  const Program& get(const std::vector<Tensor>& fetches,
                     const std::vector<const Operation*>& targets);

 private:
  const Graph& graph_;
  const MeshShape mesh_;
  const LayoutRules rules_;
  const CompileOptions options_;
  std::map<std::vector<int64_t>, Program> programs_;  // by fetch ids, -2, target addresses
};

}  // namespace mtf
