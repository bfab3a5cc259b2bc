#include "session/variable_store.h"

#include <set>

#include "core/check.h"
#include "kernels/kernels.h"
#include "mtf/errors.h"
#include "ops/state_ops.h"

namespace mtf::detail {

VariableStore::VariableStore(const Graph& graph, MeshShape mesh, LayoutRules rules,
                             std::vector<int64_t> local)
    : graph_(graph),
      mesh_(std::move(mesh)),
      rules_(std::move(rules)),
      local_(std::move(local)),
      cores_(static_cast<size_t>(mesh_.size())) {
  MTF_CHECK(!local_.empty());
}

const Operation& VariableStore::find(const std::string& name) const {
  const Operation* op = graph_.find_operation(name);
  if (!op || op->type() != "variable")
    throw ValueError("Session: no variable named \"" + name + "\" in the graph");
  return *op;
}

TensorLayout VariableStore::layout_of(const Operation& var) const {
  const Tensor t = var.output(0);
  return TensorLayout::make(t.shape(), rules_, mesh_, t.name());
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> names;
  for (const Tensor& v : graph_.all_variables()) names.push_back(v.op().name());
  return names;
}

void VariableStore::initialize(const Operation& var) {
  if (cores_[local_[0]].count(&var)) return;
  const auto& op = dynamic_cast<const ops::VariableOp&>(var);
  const TensorLayout layout = layout_of(var);
  std::map<std::vector<int64_t>, HostTensor> drawn;
  for (int64_t p : local_) {
    const std::vector<int64_t> begin = layout.slice_begin(p);
    auto it = drawn.find(begin);
    if (it == drawn.end())
      it = drawn.emplace(begin, op.initial_value(layout.slice_shape(), begin)).first;
    cores_[p][&var] = it->second;
  }
}

void VariableStore::commit(int64_t p,
                           std::vector<std::pair<const Operation*, HostTensor>>& assignments) {
  for (auto& [var, value] : assignments) cores_[p][var] = std::move(value);
}

HostTensor VariableStore::value(const Operation& var, SliceAssembler& assembler) {
  initialize(var);
  std::vector<HostTensor> slices(cores_.size());
  for (int64_t p : local_) slices[p] = cores_[p].at(&var);
  return assembler.assemble(layout_of(var), slices, "value of variable " + var.name());
}

void VariableStore::set_value(const Operation& var, const HostTensor& value) {
  const Tensor t = var.output(0);
  if (!value.valid() || value.shape() != t.shape() || value.dtype() != t.dtype()) {
    throw ValueError(str_cat("set_variable_value: variable ", t.describe(),
                             " cannot take a value of shape ",
                             value.valid() ? value.shape().to_string() : "(empty)", " ",
                             value.valid() ? dtype_name(value.dtype()) : ""));
  }
  const TensorLayout layout = layout_of(var);
  for (int64_t p : local_)
    cores_[p][&var] = kernels::block_of(value, layout.slice_begin(p), layout.slice_shape()).clone();
}

Session::SliceLayout VariableStore::slice_layout(const Operation& var) const {
  const TensorLayout layout = layout_of(var);
  Session::SliceLayout r;
  r.full = layout.shape();
  r.slice = layout.slice_shape();
  std::set<std::vector<int64_t>> seen;
  for (int64_t p = 0; p < mesh_.size(); ++p) {
    std::vector<int64_t> begin = layout.slice_begin(p);
    if (!seen.insert(begin).second) continue;
    r.begins.push_back(std::move(begin));
    r.owners.push_back(p);
  }
  return r;
}

std::vector<Session::VariableSlice> VariableStore::local_slices(const Operation& var) {
  initialize(var);
  const TensorLayout layout = layout_of(var);
  std::vector<Session::VariableSlice> r;
  std::set<std::vector<int64_t>> seen;
  for (int64_t p : local_) {
    std::vector<int64_t> begin = layout.slice_begin(p);
    if (seen.insert(begin).second) r.push_back({begin, cores_[p].at(&var)});
  }
  return r;
}

void VariableStore::set_slices(
    const Operation& var,
    const std::function<void(const std::vector<int64_t>&, HostTensor&)>& fill) {
  const TensorLayout layout = layout_of(var);
  std::map<std::vector<int64_t>, HostTensor> filled;
  for (int64_t p : local_) {
    const std::vector<int64_t> begin = layout.slice_begin(p);
    if (filled.count(begin)) continue;
    HostTensor slice(layout.slice_shape(), var.output(0).dtype());
    fill(begin, slice);
    MTF_CHECK(slice.valid() && slice.shape() == layout.slice_shape());
    filled.emplace(begin, slice);
  }
  for (int64_t p : local_) cores_[p][&var] = filled.at(layout.slice_begin(p));
}

}  // namespace mtf::detail
