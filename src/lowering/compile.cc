#include "lowering/compile.h"

#include <utility>

#include "lowering/fusion.h"
#include "lowering/kernel_plans.h"
#include "lowering/row_kernels.h"

namespace mtf {

Program compile(const Graph& graph, const std::vector<Tensor>& fetches,
                const std::vector<const Operation*>& targets, const MeshShape& mesh,
                const LayoutRules& rules, const CompileOptions& options) {
  Program program = lower(graph, fetches, targets, mesh, rules, options.reproducible);
  if (options.executable) {
    if (options.fuse) fuse_row_kernels(program);
    if (options.fuse && !options.reproducible) fuse_updates(program);
    if (options.fuse) fuse_elementwise(program);
    assign_kernel_threads(program);
    plan_kernels(program, options.reproducible);
  }
  return program;
}

ProgramCache::ProgramCache(const Graph& graph, MeshShape mesh, LayoutRules rules,
                           CompileOptions options)
    : graph_(graph), mesh_(std::move(mesh)), rules_(std::move(rules)), options_(options) {}

const Program& ProgramCache::get(const std::vector<Tensor>& fetches,
                                 const std::vector<const Operation*>& targets) {
  std::vector<int64_t> key;
  for (const Tensor& t : fetches) key.push_back(t.valid() ? t.id() : -1);
  key.push_back(-2);
  for (const Operation* op : targets) key.push_back(op ? reinterpret_cast<intptr_t>(op) : -3);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  Program program = compile(graph_, fetches, targets, mesh_, rules_, options_);
  return programs_.emplace(std::move(key), std::move(program)).first->second;
}

}  // namespace mtf
