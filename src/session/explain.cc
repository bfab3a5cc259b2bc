// Session::explain: from the compiled program of a run, every variable's,
// input's and fetch's blocks over the mesh (sharding_picture), then each
// op's collectives with their bytes per processor, and, after a simulated
// run, the bytes a core sent in the op and its time. Built on the Session's
// parts; nothing in the Session depends on it.
#include <cstdio>
#include <map>
#include <set>

#include "core/check.h"
#include "mtf/sim.h"
#include "session/session_impl.h"

namespace mtf {
namespace {

using detail::str_cat;

std::string explain_program(const Program& program, const Graph& graph, const MeshConfig& config,
                            const std::vector<Tensor>& fetches, const SimReport* report,
                            int max_blocks) {
  const MeshShape& mesh = config.mesh_shape;
  std::string out =
      str_cat("mesh ", mesh.ndims() ? mesh.to_string() : "(one processor)", " (", mesh.size(),
              " processors), layout \"", config.layout.to_string(), "\"\n");
  auto section = [&](const char* title, const std::string& name, const TensorLayout& layout) {
    out += str_cat("\n", title, " ", name, " ", sharding_picture(layout, max_blocks));
  };
  auto layout_of = [&](const Tensor& t, const std::string& name) {
    return TensorLayout::make(t.shape(), config.layout, mesh, name);
  };
  for (const Tensor& v : graph.all_variables())
    section("variable", v.op().name(), layout_of(v, v.name()));
  for (const Operation* op : program.placeholders)
    section("input", op->name(), layout_of(op->output(0), op->name()));
  for (size_t i = 0; i < fetches.size() && i < program.fetch_slots.size(); ++i)
    section("fetch", fetches[i].name(), program.slot_layouts[program.fetch_slots[i]]);
  // Collectives per op, in program order, with what the op did in the last
  // simulated run when there is one.
  const ProgramCounters counters = program.counters();
  std::map<std::string, const SimReport::OpRow*> simulated;
  if (report)
    for (const SimReport::OpRow& row : report->ops) simulated[row.op] = &row;
  out += report ? "\ncollectives per op (bytes each processor sends, by Mesh TensorFlow's "
                  "counters; in the last simulated run, the bytes a core sent in the op and "
                  "its time, means over cores):\n"
                : "\ncollectives per op (bytes each processor sends, by Mesh TensorFlow's "
                  "counters):\n";
  std::set<std::string> listed;
  int rows = 0;
  for (const Step& step : program.steps) {
    const std::string& name = step.op->name();
    auto it = counters.bytes_by_op.find(name);
    if (it == counters.bytes_by_op.end() || !listed.insert(name).second) continue;
    std::string line = str_cat("  ", name, ":");
    const char* sep = " ";
    for (const auto& [what, bytes] : it->second) {
      line += str_cat(sep, what, " ", bytes, " bytes");
      sep = ", ";
    }
    auto sim = simulated.find(name);
    if (sim != simulated.end()) {
      char time[32];
      std::snprintf(time, sizeof(time), "%.3f", sim->second->time * 1e6);
      line += str_cat("; simulated: ", sim->second->bytes, " bytes sent, ", time, " us");
    }
    out += line + "\n";
    ++rows;
  }
  if (rows == 0) out += "  none: every op runs on its own slices\n";
  return out;
}

}  // namespace

std::string Session::explain(const std::vector<Tensor>& fetches,
                             const std::vector<Operation*>& targets, int max_blocks) {
  return explain_program(impl_->program(fetches, targets), impl_->graph(), impl_->config(), fetches,
                         impl_->executor().report(), max_blocks);
}

}  // namespace mtf
