// variable_store.h — a Session's variables: every local processor's slice
// of each variable, laid out by the mesh and layout rules. Slices are drawn
// from the logical indices they hold, so every mesh and layout starts from
// the same values; processors holding the same slice share one buffer
// (values are never changed in place: an assignment installs a new tensor).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mtf/session.h"
#include "session/slice_assembly.h"

namespace mtf::detail {

class VariableStore {
 public:
  using Slices = std::map<const Operation*, HostTensor>;  // one processor's, by variable op

  // `local`: the processors this process holds (ascending, not empty).
  VariableStore(const Graph& graph, MeshShape mesh, LayoutRules rules, std::vector<int64_t> local);

  // The variable op named `name`; ValueError naming it when there is none.
  const Operation& find(const std::string& name) const;
  // LayoutError naming the variable when its layout is impossible.
  TensorLayout layout_of(const Operation& var) const;
  std::vector<std::string> names() const;  // in graph order

  // Draws the variable's initial slices unless it has them already.
  void initialize(const Operation& var);
  // Processor p's slices, as a run reads them (RunState::variables).
  const Slices& slices_of(int64_t p) const { return cores_[p]; }
  // Installs a run's new values for processor p, in order.
  void commit(int64_t p, std::vector<std::pair<const Operation*, HostTensor>>& assignments);

  HostTensor value(const Operation& var, SliceAssembler& assembler);
  void set_value(const Operation& var, const HostTensor& value);
  Session::SliceLayout slice_layout(const Operation& var) const;
  std::vector<Session::VariableSlice> local_slices(const Operation& var);
  void set_slices(const Operation& var,
                  const std::function<void(const std::vector<int64_t>&, HostTensor&)>& fill);

 private:
  const Graph& graph_;
  const MeshShape mesh_;
  const LayoutRules rules_;
  const std::vector<int64_t> local_;
  std::vector<Slices> cores_;  // by processor; entries of other processes' stay empty
};

}  // namespace mtf::detail
