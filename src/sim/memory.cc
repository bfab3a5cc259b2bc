#include "sim/memory.h"

#include <algorithm>
#include <map>

#include "core/check.h"

namespace mtf::sim {
namespace {

std::string human(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= (1LL << 30)) return detail::str_cat(b / (1LL << 30), " GiB");
  if (b >= (1LL << 20)) return detail::str_cat(b / (1LL << 20), " MiB");
  if (b >= 1024) return detail::str_cat(b / 1024, " KiB");
  return detail::str_cat(bytes, " B");
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> variable_bytes(const Graph& graph,
                                                            const LayoutRules& rules,
                                                            const MeshShape& mesh) {
  std::vector<std::pair<std::string, int64_t>> vars;
  for (const Tensor& v : graph.all_variables()) {
    vars.push_back(
        {v.op().name(),
         TensorLayout::make(v.shape(), rules, mesh, v.name()).slice_shape().num_elements() *
             static_cast<int64_t>(dtype_size(v.dtype()))});
  }
  return vars;
}

MemoryEstimate estimate_memory(const Program& program,
                               const std::vector<std::pair<std::string, int64_t>>& variables) {
  MemoryEstimate est;
  for (const auto& [name, bytes] : variables) est.persistent += bytes;
  // Live slices: slot -> (description, bytes).
  std::map<int, std::pair<std::string, int64_t>> live;
  std::vector<std::pair<std::string, int64_t>> held;  // new variable values
  int64_t live_bytes = 0, held_bytes = 0;
  est.peak = est.persistent;
  est.peak_at = "start";
  auto snapshot = [&](int64_t transient, const std::string& transient_name, const Step& s,
                      size_t i) {
    const int64_t total = est.persistent + live_bytes + held_bytes + transient;
    if (total <= est.peak) return;
    est.peak = total;
    est.activations = live_bytes + transient;
    est.peak_at = detail::str_cat(s.op->name(), " (step ", i, ")");
    est.largest = held;
    for (const auto& [slot, item] : live) est.largest.push_back(item);
    for (const auto& v : variables) est.largest.push_back({"variable " + v.first, v.second});
    if (transient) est.largest.push_back({transient_name, transient});
    std::sort(est.largest.begin(), est.largest.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
  };
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    int64_t transient = 0;
    std::string transient_name;
    if (s.kind == Step::Kind::kAllgather) {
      const int64_t n =
          s.output_layouts.empty()
              ? 1
              : s.output_layouts[0].slice_shape().num_elements() /
                    std::max<int64_t>(
                        1, program.slot_layouts[s.input_slots[0]].slice_shape().num_elements());
      transient = n * program.slot_bytes(s.input_slots[0]);
      transient_name = "allgather buffer of " + s.op->name();
    }
    if (s.kind == Step::Kind::kAlltoall) {  // the blocks sent and received
      transient = 2 * program.slot_bytes(s.input_slots[0]);
      transient_name = "alltoall buffers of " + s.op->name();
    }
    if (s.kind == Step::Kind::kCompute && s.op->is_assignment()) {
      // The new value is held until the run ends.
      const Operation& var = s.op->inputs()[0].op();
      const int64_t bytes = program.slot_layouts[s.input_slots[0]].slice_shape().num_elements() *
                            static_cast<int64_t>(dtype_size(var.output(0).dtype()));
      held.push_back({"new value of " + var.name(), bytes});
      held_bytes += bytes;
    }
    const bool reads_variable = s.kind == Step::Kind::kCompute && s.op->type() == "variable";
    for (size_t k = 0; k < s.output_slots.size(); ++k) {
      const int slot = s.output_slots[k];
      if (live.count(slot)) continue;  // in place (allreduce)
      const int64_t bytes = reads_variable ? 0 : program.slot_bytes(slot);
      live[slot] = {s.op->name() + (s.output_slots.size() > 1 ? ":" + std::to_string(k) : "") +
                        " " + program.slot_layouts[slot].slice_shape().to_string(),
                    bytes};
      live_bytes += bytes;
    }
    snapshot(transient, transient_name, s, i);
    for (int slot : s.free_after) {
      auto it = live.find(slot);
      if (it == live.end()) continue;
      live_bytes -= it->second.second;
      live.erase(it);
    }
  }
  return est;
}

std::string MemoryEstimate::describe(int top) const {
  std::string s = detail::str_cat("peak ", human(peak), " per core at ", peak_at, " (variables ",
                                  human(persistent), ")");
  if (!largest.empty()) {
    s += "; largest then:";
    for (int i = 0; i < top && i < static_cast<int>(largest.size()); ++i)
      s += detail::str_cat(i ? "," : "", " ", largest[i].first, " ", human(largest[i].second));
  }
  return s;
}

}  // namespace mtf::sim
