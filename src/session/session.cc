// Session: a thin front over the session layer's parts. SessionImpl holds
// the compiled programs, the variables and the executor, and run() joins
// them; the public methods forward to it. Session::explain lives in
// explain.cc.
#include "mtf/session.h"

#include <chrono>

#include "core/check.h"
#include "kernels/blas_core.h"
#include "mtf/errors.h"
#include "mtf/sim.h"
#include "session/feeds.h"
#include "session/session_impl.h"

namespace mtf {

SimOptionsBox::SimOptionsBox() : options_(std::make_unique<SimOptions>()) {}
SimOptionsBox::SimOptionsBox(const SimOptions& options)
    : options_(std::make_unique<SimOptions>(options)) {}
SimOptionsBox::SimOptionsBox(const SimOptionsBox& other)
    : options_(std::make_unique<SimOptions>(*other.options_)) {}
SimOptionsBox& SimOptionsBox::operator=(const SimOptionsBox& other) {
  *options_ = *other.options_;
  return *this;
}
SimOptionsBox::~SimOptionsBox() = default;

const char* mesh_impl_name(MeshImpl impl) {
  switch (impl) {
    case MeshImpl::kSimd:
      return "simd";
    case MeshImpl::kPlacement:
      return "placement";
    case MeshImpl::kSimulated:
      return "simulated";
  }
  return "?";
}

MeshImpl parse_mesh_impl(const std::string& name) {
  for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement, MeshImpl::kSimulated})
    if (name == mesh_impl_name(impl)) return impl;
  throw ValueError("mesh_impl must be simd, placement or simulated, not \"" + name + "\"");
}

namespace detail {
namespace {

// "fetch loss:0, accuracy:0; 12 assignments"
std::string program_label(const std::vector<Tensor>& fetches,
                          const std::vector<Operation*>& targets) {
  std::string label;
  for (const Tensor& t : fetches) {
    label += label.empty() ? "fetch " : ", ";
    label += t.valid() ? t.name() : "(invalid)";
  }
  if (!targets.empty())
    label += (label.empty() ? "" : "; ") + std::to_string(targets.size()) + " assignments";
  return label.empty() ? "an empty run" : label;
}

// check_numerics runs every op unfused, so that the op it names is the one
// that made the value.
MeshConfig numerics_checked(MeshConfig config) {
  if (config.check_numerics) config.fuse = false;
  return config;
}

std::unique_ptr<Executor> checked_executor(Graph& graph, MeshConfig& config) {
  config.layout.validate(config.mesh_shape);
  kernels::check_blas_core();  // says so, once, if OpenBLAS runs generic kernels
  return make_executor(graph, config);
}

}  // namespace

SessionImpl::SessionImpl(Graph& graph, MeshConfig config)
    : graph_(graph),
      config_(numerics_checked(std::move(config))),
      executor_(checked_executor(graph_, config_)),
      programs_(graph_, config_.mesh_shape, config_.layout, executor_->compile_options(config_)),
      variables_(graph_, config_.mesh_shape, config_.layout, executor_->local_processors()),
      assembler_(config_.mesh_shape, executor_->process_transport()) {
  for (const Tensor& v : graph_.all_variables()) {
    variables_.layout_of(v.op());  // a LayoutError naming the variable, before any run
    if (executor_->holds_values()) variables_.initialize(v.op());
  }
}

void SessionImpl::require_values(const char* what) const {
  if (!executor_->holds_values()) {
    throw ValueError(std::string("Session::") + what +
                     ": a cost-only simulation holds no tensor values; use "
                     "SimMode::kFunctional for values");
  }
}

const Program& SessionImpl::program(const std::vector<Tensor>& fetches,
                                    const std::vector<Operation*>& targets) {
  for (const Operation* op : targets) {
    if (op && !op->is_assignment()) {
      throw ValueError("Session::run: target \"" + op->name() + "\" (" + op->type() +
                       ") is not an assignment; fetch its outputs instead");
    }
  }
  return programs_.get(fetches, std::vector<const Operation*>(targets.begin(), targets.end()));
}

std::vector<HostTensor> SessionImpl::run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                                         const std::vector<Operation*>& targets) {
  const Program& prog = program(fetches, targets);
  const std::vector<int64_t>& local = executor_->local_processors();
  std::map<int64_t, FedValue> feed_map;
  if (executor_->holds_values()) {
    feed_map = check_feeds(graph_, prog, feeds, config_.mesh_shape, config_.layout, local);
    last_fed_bytes = 0;
    for (const auto& [id, fed] : feed_map) last_fed_bytes += fed.value.num_bytes();
    for (const Step& s : prog.steps)
      if (s.kind == Step::Kind::kCompute && s.op->type() == "variable")
        variables_.initialize(*s.op);
  }
  const auto run_start = std::chrono::steady_clock::now();
  // Profiling times the steps of the first processor this process runs, or
  // of each when the executor watches each.
  std::vector<std::unique_ptr<exec::StepTimer>> timers;
  std::vector<StepHooks*> hooks;
  exec::ProgramTimes* times = nullptr;
  if (config_.profile && executor_->profiles()) {
    times = &profile_times[&prog];
    if (times->label.empty()) times->label = program_label(fetches, targets);
    const size_t timed = executor_->watches_each_processor() ? local.size() : 1;
    times->processors.assign(local.begin(), local.begin() + static_cast<std::ptrdiff_t>(timed));
    times->step_seconds.resize(timed);
    for (size_t i = 0; i < timed; ++i) {
      timers.push_back(std::make_unique<exec::StepTimer>(prog, times->step_seconds[i]));
      hooks.push_back(timers.back().get());
    }
  }
  CoreRuns runs(config_.mesh_shape.size());
  for (int64_t p : local) {
    runs.states[p].variables = &variables_.slices_of(p);
    runs.states[p].feeds = &feed_map;
    runs.states[p].run_counter = run_counter;
    runs.states[p].reproducible = config_.reproducible;
    runs.states[p].check_numerics = config_.check_numerics;
  }
  executor_->run(prog, runs, hooks);
  // Assignments take effect when the run ends, in program order.
  for (int64_t p : local) variables_.commit(p, runs.states[p].pending_assignments);
  ++run_counter;
  if (!executor_->holds_values()) return std::vector<HostTensor>(prog.fetch_slots.size());
  std::vector<HostTensor> result;
  for (size_t i = 0; i < prog.fetch_slots.size(); ++i) {
    const TensorLayout& layout = prog.slot_layouts[prog.fetch_slots[i]];
    std::vector<HostTensor> slices(runs.fetched.size());
    for (int64_t p : local) slices[p] = runs.fetched[p][i];
    result.push_back(assembler_.assemble(layout, slices, "fetch of " + fetches[i].describe()));
  }
  if (times) {
    times->runs += 1;
    times->run_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  }
  return result;
}

}  // namespace detail

Session::Session(Graph& graph, MeshConfig config)
    : impl_(std::make_unique<detail::SessionImpl>(graph, std::move(config))) {}
Session::~Session() = default;

std::vector<HostTensor> Session::run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                                     const std::vector<Operation*>& targets) {
  return impl_->run(fetches, feeds, targets);
}
std::vector<HostTensor> Session::run(std::initializer_list<Tensor> fetches, const Feeds& feeds,
                                     const std::vector<Operation*>& targets) {
  return impl_->run(std::vector<Tensor>(fetches), feeds, targets);
}
HostTensor Session::run(const Tensor& fetch, const Feeds& feeds) {
  return impl_->run({fetch}, feeds, {})[0];
}

HostTensor Session::variable_value(const std::string& name) const {
  const Operation& var = impl_->variables().find(name);
  impl_->require_values("variable_value");
  return impl_->variables().value(var, impl_->assembler());
}
void Session::set_variable_value(const std::string& name, const HostTensor& value) {
  const Operation& var = impl_->variables().find(name);
  impl_->require_values("set_variable_value");
  impl_->variables().set_value(var, value);
}
std::vector<std::string> Session::variable_names() const { return impl_->variables().names(); }
Session::SliceLayout Session::variable_slice_layout(const std::string& name) const {
  return impl_->variables().slice_layout(impl_->variables().find(name));
}
std::vector<Session::VariableSlice> Session::variable_slices(const std::string& name) const {
  const Operation& var = impl_->variables().find(name);
  impl_->require_values("variable_slices");
  return impl_->variables().local_slices(var);
}
void Session::set_variable_slices(
    const std::string& name,
    const std::function<void(const std::vector<int64_t>&, HostTensor&)>& fill) {
  const Operation& var = impl_->variables().find(name);
  impl_->require_values("set_variable_slices");
  impl_->variables().set_slices(var, fill);
}

Session::FeedBlock Session::local_feed_block(const Tensor& placeholder) const {
  const MeshConfig& c = impl_->config();
  return detail::feed_block(placeholder, c.mesh_shape, c.layout,
                            impl_->executor().local_processors());
}
int64_t Session::last_fed_bytes() const { return impl_->last_fed_bytes; }
uint64_t Session::run_counter() const { return impl_->run_counter; }
void Session::set_run_counter(uint64_t n) { impl_->run_counter = n; }
const MeshConfig& Session::config() const { return impl_->config(); }

const SimReport& Session::simulation_report() const {
  if (const SimReport* report = impl_->executor().report()) return *report;
  throw ValueError(impl_->config().impl == MeshImpl::kSimulated
                       ? "Session::simulation_report: no run has been simulated yet"
                       : "Session::simulation_report: this session is not simulated (use "
                         "MeshImpl::kSimulated)");
}

Profile Session::profile() const {
  Profile p;
  for (const auto& [program, times] : impl_->profile_times)
    if (times.runs > 0) p.programs.push_back(exec::summarize(*program, times));
  std::stable_sort(p.programs.begin(), p.programs.end(),
                   [](const ProgramProfile& a, const ProgramProfile& b) {
                     return a.run_seconds * double(a.runs) > b.run_seconds * double(b.runs);
                   });
  return p;
}
void Session::reset_profile() { impl_->profile_times.clear(); }

void Session::check(const std::vector<Tensor>& fetches, const std::vector<Operation*>& targets) {
  impl_->program(fetches, targets);
}
std::string Session::program_text(const std::vector<Tensor>& fetches,
                                  const std::vector<Operation*>& targets) {
  return impl_->program(fetches, targets).to_string();
}
std::string Session::counters_text(const std::vector<Tensor>& fetches,
                                   const std::vector<Operation*>& targets) {
  return impl_->program(fetches, targets).counters().to_string();
}
double Session::flops_per_run(const std::vector<Tensor>& fetches,
                              const std::vector<Operation*>& targets) {
  const Program& p = impl_->program(fetches, targets);
  return p.total_flops() * static_cast<double>(p.mesh.size());
}

}  // namespace mtf
