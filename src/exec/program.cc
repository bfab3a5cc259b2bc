#include "exec/program.h"

#include <map>
#include <set>
#include <sstream>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

double Program::total_flops() const {
  double f = 0;
  for (const auto& s : steps) f += s.flops;
  return f;
}

std::string Program::to_string() const {
  std::ostringstream os;
  os << "program: " << steps.size() << " steps, " << total_flops() << " flops\n";
  for (const auto& s : steps) {
    os << "  " << s.op->name() << " = " << s.op->type() << "(";
    for (size_t i = 0; i < s.input_slots.size(); ++i)
      os << (i ? ", " : "") << "%" << s.input_slots[i];
    os << ") ->";
    for (size_t i = 0; i < s.output_slots.size(); ++i)
      os << " %" << s.output_slots[i] << s.output_slice_shapes[i].to_string();
    os << "  flops=" << s.flops << "\n";
  }
  return os.str();
}

Program lower_single_processor(const Graph& graph, const std::vector<Tensor>& fetches,
                               const std::vector<const Operation*>& targets) {
  std::set<const Operation*> needed;
  std::vector<const Operation*> stack;
  for (const Tensor& t : fetches) {
    if (!t.valid()) throw ValueError("Session::run: a fetch is an invalid mtf::Tensor");
    if (&t.graph() != &graph)
      throw ValueError("Session::run: fetch " + t.describe() + " belongs to another graph");
    stack.push_back(&t.op());
  }
  for (const Operation* op : targets) {
    if (!op) throw ValueError("Session::run: a target is a null Operation*");
    if (&op->graph() != &graph)
      throw ValueError("Session::run: target \"" + op->name() + "\" belongs to another graph");
    stack.push_back(op);
  }
  while (!stack.empty()) {
    const Operation* op = stack.back();
    stack.pop_back();
    if (!needed.insert(op).second) continue;
    for (const Tensor& in : op->inputs()) stack.push_back(&in.op());
  }

  Program p;
  std::map<int64_t, int> slot_of;  // tensor id -> slot
  std::map<int, size_t> last_reader;
  for (const auto& owned : graph.operations()) {
    const Operation* op = owned.get();
    if (!needed.count(op)) continue;
    Step s;
    s.op = op;
    for (const Tensor& in : op->inputs()) {
      auto it = slot_of.find(in.id());
      MTF_CHECK(it != slot_of.end());
      s.input_slots.push_back(it->second);
      last_reader[it->second] = p.steps.size();
    }
    for (const Tensor& out : op->outputs()) {
      slot_of[out.id()] = p.num_slots;
      s.output_slots.push_back(p.num_slots++);
      s.output_slice_shapes.push_back(out.shape());
      s.output_slice_offsets.emplace_back(out.shape().ndims(), 0);
    }
    s.flops = op->flops();
    if (op->type() == "placeholder") p.placeholders.push_back(op);
    p.steps.push_back(std::move(s));
  }
  std::set<int> fetched;
  for (const Tensor& t : fetches) {
    p.fetch_slots.push_back(slot_of.at(t.id()));
    fetched.insert(p.fetch_slots.back());
  }
  for (const auto& [slot, step] : last_reader)
    if (!fetched.count(slot)) p.steps[step].free_after.push_back(slot);
  // Outputs nobody reads are freed right after the step that made them.
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int slot : p.steps[i].output_slots)
      if (!last_reader.count(slot) && !fetched.count(slot)) p.steps[i].free_after.push_back(slot);
  return p;
}

}  // namespace mtf
