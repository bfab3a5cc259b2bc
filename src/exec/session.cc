// Session: lowers the needed part of the graph to a per-processor program,
// executes it step by step on host slices, and keeps variable values.
#include "mtf/session.h"

#include <map>
#include <set>

#include "core/check.h"
#include "exec/kernel_context.h"
#include "exec/program.h"
#include "mtf/errors.h"
#include "ops/state_ops.h"

namespace mtf {
namespace detail {
namespace {

// Rethrows an error raised while running `op` as the same type, with the op
// named first, so a failure deep in a kernel says where in the graph it was.
[[noreturn]] void rethrow_in_op(const Operation& op, const Error& e) {
  const std::string msg = "while running op \"" + op.name() + "\" (" + op.type() + "): " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
  if (dynamic_cast<const IoError*>(&e)) throw IoError(msg);
  if (dynamic_cast<const OutOfMemoryError*>(&e)) throw OutOfMemoryError(msg);
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(msg);
  throw Error(msg);
}

}  // namespace

class SessionImpl {
 public:
  explicit SessionImpl(Graph& graph) : graph_(graph) {
    for (const Tensor& v : graph_.all_variables()) ensure_initialized(v.op());
  }

  std::vector<HostTensor> run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                              const std::vector<Operation*>& targets) {
    const Program& program = program_for(fetches, targets);
    std::map<int64_t, HostTensor> feed_map = check_feeds(program, feeds);
    for (const Step& s : program.steps)
      if (s.op->type() == "variable") ensure_initialized(*s.op);

    RunState state;
    state.variables = &variables_;
    state.feeds = &feed_map;
    state.run_counter = run_counter_;
    std::vector<HostTensor> slots(program.num_slots);
    std::vector<HostTensor> outputs;
    std::vector<const HostTensor*> inputs;
    for (const Step& step : program.steps) {
      inputs.clear();
      for (int slot : step.input_slots) inputs.push_back(&slots[slot]);
      outputs.assign(step.output_slots.size(), HostTensor());
      KernelContext ctx(*step.op, inputs, &outputs, &step.output_slice_shapes,
                        &step.output_slice_offsets, &state);
      try {
        step.op->compute(ctx);
      } catch (const Error& e) {
        rethrow_in_op(*step.op, e);
      }
      for (size_t i = 0; i < step.output_slots.size(); ++i) {
        MTF_CHECK(outputs[i].valid());
        MTF_CHECK(outputs[i].shape() == step.output_slice_shapes[i]);
        slots[step.output_slots[i]] = std::move(outputs[i]);
      }
      for (int slot : step.free_after) slots[slot] = HostTensor();
    }
    std::vector<HostTensor> result;
    for (int slot : program.fetch_slots) result.push_back(slots[slot]);
    // Assignments take effect when the run ends, in program order.
    for (auto& [var, value] : state.pending_assignments) variables_[var] = std::move(value);
    ++run_counter_;
    return result;
  }

  HostTensor variable_value(const std::string& name) {
    const Operation& op = find_variable(name);
    ensure_initialized(op);
    return variables_.at(&op);
  }

  void set_variable_value(const std::string& name, const HostTensor& value) {
    const Operation& op = find_variable(name);
    const Tensor t = op.output(0);
    if (!value.valid() || value.shape() != t.shape() || value.dtype() != t.dtype()) {
      throw ValueError(str_cat("set_variable_value: variable ", t.describe(),
                               " cannot take a value of shape ",
                               value.valid() ? value.shape().to_string() : "(empty)", " ",
                               value.valid() ? dtype_name(value.dtype()) : ""));
    }
    variables_[&op] = value.clone();
  }

  uint64_t run_counter() const { return run_counter_; }
  void set_run_counter(uint64_t n) { run_counter_ = n; }

  std::string program_text(const std::vector<Tensor>& fetches,
                           const std::vector<Operation*>& targets) {
    return program_for(fetches, targets).to_string();
  }

 private:
  const Operation& find_variable(const std::string& name) const {
    const Operation* op = graph_.find_operation(name);
    if (!op || op->type() != "variable") {
      throw ValueError("Session: no variable named \"" + name + "\" in the graph");
    }
    return *op;
  }

  void ensure_initialized(const Operation& op) {
    if (variables_.count(&op)) return;
    const auto& var = dynamic_cast<const ops::VariableOp&>(op);
    const Shape& shape = var.output(0).shape();
    variables_[&op] = var.initial_value(shape, std::vector<int64_t>(shape.ndims(), 0));
  }

  const Program& program_for(const std::vector<Tensor>& fetches,
                             const std::vector<Operation*>& targets) {
    std::vector<int64_t> key;
    for (const Tensor& t : fetches) key.push_back(t.valid() ? t.id() : -1);
    key.push_back(-2);
    for (const Operation* op : targets) {
      if (op && !op->is_assignment()) {
        throw ValueError("Session::run: target \"" + op->name() + "\" (" + op->type() +
                         ") is not an assignment; fetch its outputs instead");
      }
      key.push_back(op && op->num_outputs() == 0 ? reinterpret_cast<intptr_t>(op) : -3);
    }
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    std::vector<const Operation*> t(targets.begin(), targets.end());
    return programs_.emplace(key, lower_single_processor(graph_, fetches, t)).first->second;
  }

  std::map<int64_t, HostTensor> check_feeds(const Program& program, const Feeds& feeds) {
    std::map<int64_t, HostTensor> m;
    for (const auto& [t, value] : feeds) {
      if (!t.valid() || t.op().type() != "placeholder") {
        throw ValueError("Session::run: feed target " + (t.valid() ? t.describe() : "(invalid)") +
                         " is not a placeholder");
      }
      if (!value.valid() || value.shape() != t.shape() || value.dtype() != t.dtype()) {
        throw ValueError(str_cat("Session::run: placeholder ", t.describe(), " was fed ",
                                 value.valid()
                                     ? value.shape().to_string() + " " + dtype_name(value.dtype())
                                     : std::string("an empty HostTensor"),
                                 "; feed exactly its shape and dtype"));
      }
      m[t.id()] = value;
    }
    for (const Operation* p : program.placeholders) {
      if (!m.count(p->output(0).id())) {
        throw ValueError("Session::run: placeholder " + p->output(0).describe() +
                         " is needed by this run but was not fed");
      }
    }
    return m;
  }

  Graph& graph_;
  std::map<const Operation*, HostTensor> variables_;
  std::map<std::vector<int64_t>, Program> programs_;
  uint64_t run_counter_ = 0;
};

}  // namespace detail

Session::Session(Graph& graph) : impl_(std::make_unique<detail::SessionImpl>(graph)) {}
Session::~Session() = default;

std::vector<HostTensor> Session::run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                                     const std::vector<Operation*>& targets) {
  return impl_->run(fetches, feeds, targets);
}

HostTensor Session::run(const Tensor& fetch, const Feeds& feeds) {
  return impl_->run({fetch}, feeds, {})[0];
}

HostTensor Session::variable_value(const std::string& name) const {
  return impl_->variable_value(name);
}
void Session::set_variable_value(const std::string& name, const HostTensor& value) {
  impl_->set_variable_value(name, value);
}
uint64_t Session::run_counter() const { return impl_->run_counter(); }
void Session::set_run_counter(uint64_t n) { impl_->set_run_counter(n); }
std::string Session::program_text(const std::vector<Tensor>& fetches,
                                  const std::vector<Operation*>& targets) {
  return impl_->program_text(fetches, targets);
}

}  // namespace mtf
