// Session: lowers what a run needs for the configured mesh, runs it with the
// chosen mesh implementation, keeps every processor's variable slices, and
// assembles fetches and variable values into whole host tensors.
#include "mtf/session.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "collectives/tags.h"
#include "core/check.h"
#include "exec/step_profile.h"
#include "kernels/blas_core.h"
#include "kernels/blas_threads.h"
#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "lowering/fusion.h"
#include "lowering/kernel_plans.h"
#include "lowering/program.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"
#include "ops/state_ops.h"
#include "placement/placement_executor.h"
#include "session/explain.h"
#include "sim/engine.h"
#include "sim/memory.h"
#include "simd/simd_executor.h"

namespace mtf {
namespace detail {

// "[0, 128, 0]"
inline std::string offsets_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

class SessionImpl {
 public:
  SessionImpl(Graph& graph, MeshConfig config)
      : graph_(graph), config_(std::move(config)), cores_(config_.mesh_shape.size()) {
    config_.layout.validate(config_.mesh_shape);
    kernels::check_blas_core();  // says so, once, if OpenBLAS runs generic kernels
    if (config_.impl == MeshImpl::kSimulated) {
      // A host's devices are the mesh's ranks, however many the file says.
      Topology& topo = config_.sim.topology;
      if (topo.host_cpus > 0 && topo.nodes == 1)
        topo.devices_per_node = static_cast<int>(config_.mesh_shape.size()) / topo.cores_per_chip;
      engine_ = std::make_unique<sim::Engine>(config_.sim, config_.mesh_shape);
    }
    if (Transport* t = config_.process_transport.get()) {
      if (t->size() != config_.mesh_shape.size()) {
        throw LayoutError(str_cat("mesh ", config_.mesh_shape.to_string(), " has ",
                                  config_.mesh_shape.size(), " processors but the job has ",
                                  t->size(), " processes; run one process per processor"));
      }
      if (config_.impl != MeshImpl::kSimd) {
        throw ValueError("a multi-process Session runs the SIMD mesh implementation only");
      }
      local_ = {t->rank()};
    } else {
      for (int64_t p = 0; p < config_.mesh_shape.size(); ++p) local_.push_back(p);
    }
    for (const Tensor& v : graph_.all_variables()) {
      variable_layout(v.op());  // a LayoutError naming the variable, before any run
      if (!cost_only()) ensure_initialized(v.op());
    }
  }

  bool cost_only() const {
    return config_.impl == MeshImpl::kSimulated && config_.sim.mode == SimMode::kCostOnly;
  }

  const SimReport& simulation_report() const {
    if (!report_) {
      throw ValueError(config_.impl == MeshImpl::kSimulated
                           ? "Session::simulation_report: no run has been simulated yet"
                           : "Session::simulation_report: this session is not simulated (use "
                             "MeshImpl::kSimulated)");
    }
    return *report_;
  }

  Profile profile() const {
    Profile p;
    for (const auto& [program, times] : profile_times_)
      if (times.runs > 0) p.programs.push_back(exec::summarize(*program, times));
    std::stable_sort(p.programs.begin(), p.programs.end(),
                     [](const ProgramProfile& a, const ProgramProfile& b) {
                       return a.run_seconds * double(a.runs) > b.run_seconds * double(b.runs);
                     });
    return p;
  }
  void reset_profile() { profile_times_.clear(); }

  std::vector<HostTensor> run(const std::vector<Tensor>& fetches, const Feeds& feeds,
                              const std::vector<Operation*>& targets) {
    const Program& program = program_for(fetches, targets);
    std::map<int64_t, FedValue> feed_map;
    if (!cost_only()) {
      feed_map = check_feeds(program, feeds);
      last_fed_bytes_ = 0;
      for (const auto& [id, fed] : feed_map) last_fed_bytes_ += fed.value.num_bytes();
      for (const Step& s : program.steps)
        if (s.kind == Step::Kind::kCompute && s.op->type() == "variable") ensure_initialized(*s.op);
    }
    sim::MemoryEstimate memory;
    if (engine_) {
      // Per program, once: layouts do not change between runs.
      auto it = memory_.find(&program);
      if (it == memory_.end()) it = memory_.emplace(&program, check_memory(program)).first;
      memory = it->second;
    }

    const auto run_start = std::chrono::steady_clock::now();
    // Profiling (not in simulation: its steps take virtual time) times the
    // steps of the first processor this process runs.
    std::unique_ptr<exec::StepTimer> timer;
    exec::ProgramTimes* times = nullptr;
    if (config_.profile && !engine_) {
      times = &profile_times_[&program];
      if (times->label.empty()) times->label = program_label(fetches, targets);
      timer = std::make_unique<exec::StepTimer>(program, *times);
    }
    const int64_t n = config_.mesh_shape.size();
    std::vector<RunState> states(n);
    for (int64_t p : local_) {
      states[p].variables = &cores_[p];
      states[p].feeds = &feed_map;
      states[p].run_counter = run_counter_;
      states[p].reproducible = config_.reproducible;
    }
    std::vector<std::vector<HostTensor>> fetched(n);
    if (engine_) {
      SimReport rep = engine_->run(program, [&](Transport& t, StepHooks& hooks) {
        // The engine may run a cost-only step twice: each time afresh.
        states[t.rank()].pending_assignments.clear();
        fetched[t.rank()].clear();
        run_core(program, t.rank(), &t, states[t.rank()], &fetched[t.rank()], &hooks);
      });
      rep.layout = config_.layout.to_string();
      rep.peak_memory = memory.peak;
      rep.peak_memory_at = memory.peak_at;
      report_ = std::make_unique<SimReport>(std::move(rep));
    } else if (Transport* t = config_.process_transport.get()) {
      // The job's ranks on this machine compute at once, as a pool's would,
      // and share BLAS's threads the same way (so the numbers match the
      // in-process run bit for bit: OpenBLAS's results depend on its thread
      // count).
      kernels::BlasThreadsShare blas(rank_threads(t->local_size(), RankExecution::kPool));
      run_core(program, t->rank(), t, states[t->rank()], &fetched[t->rank()], timer.get());
    } else if (n == 1) {
      run_core(program, 0, nullptr, states[0], &fetched[0], timer.get());
    } else if (config_.impl == MeshImpl::kSimd) {
      kernels::BlasThreadsShare blas(rank_threads(static_cast<int>(n), config_.execution));
      run_in_process(
          static_cast<int>(n),
          [&](Transport& t) {
            run_core(program, t.rank(), &t, states[t.rank()], &fetched[t.rank()],
                     t.rank() == 0 ? timer.get() : nullptr);
          },
          config_.execution, config_.timeout);
    } else {
      run_placement(program, states, &fetched, timer.get());
    }
    // Assignments take effect when the run ends, in program order.
    for (int64_t p : local_)
      for (auto& [var, value] : states[p].pending_assignments) cores_[p][var] = std::move(value);
    ++run_counter_;
    std::vector<HostTensor> result;
    if (cost_only()) return std::vector<HostTensor>(program.fetch_slots.size());
    for (size_t i = 0; i < program.fetch_slots.size(); ++i) {
      const TensorLayout& layout = program.slot_layouts[program.fetch_slots[i]];
      std::vector<HostTensor> slices(n);
      for (int64_t p : local_) slices[p] = fetched[p][i];
      result.push_back(assemble(layout, slices, "fetch of " + fetches[i].describe()));
    }
    if (times) {
      times->runs += 1;
      times->run_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    }
    return result;
  }

  HostTensor variable_value(const std::string& name) {
    const Operation& op = find_variable(name);
    require_values("variable_value");
    ensure_initialized(op);
    std::vector<HostTensor> slices(cores_.size());
    for (int64_t p : local_) slices[p] = cores_[p].at(&op);
    return assemble(variable_layout(op), slices, "value of variable " + name);
  }

  void set_variable_value(const std::string& name, const HostTensor& value) {
    const Operation& op = find_variable(name);
    require_values("set_variable_value");
    const Tensor t = op.output(0);
    if (!value.valid() || value.shape() != t.shape() || value.dtype() != t.dtype()) {
      throw ValueError(str_cat("set_variable_value: variable ", t.describe(),
                               " cannot take a value of shape ",
                               value.valid() ? value.shape().to_string() : "(empty)", " ",
                               value.valid() ? dtype_name(value.dtype()) : ""));
    }
    const TensorLayout layout = variable_layout(op);
    for (int64_t p : local_)
      cores_[p][&op] =
          kernels::block_of(value, layout.slice_begin(p), layout.slice_shape()).clone();
  }

  Session::FeedBlock local_feed_block(const Tensor& t) const {
    if (!t.valid() || t.op().type() != "placeholder") {
      throw ValueError("Session::local_feed_block: " + (t.valid() ? t.describe() : "(invalid)") +
                       " is not a placeholder");
    }
    const TensorLayout layout =
        TensorLayout::make(t.shape(), config_.layout, config_.mesh_shape, t.op().name());
    const Shape slice = layout.slice_shape();
    const int rank = t.shape().ndims();
    std::vector<int64_t> lo(rank, INT64_MAX), hi(rank, 0);
    for (int64_t p : local_) {
      const std::vector<int64_t> b = layout.slice_begin(p);
      for (int a = 0; a < rank; ++a) {
        lo[a] = std::min(lo[a], b[a]);
        hi[a] = std::max(hi[a], b[a] + slice[a].size);
      }
    }
    Session::FeedBlock block;
    std::vector<Dimension> dims;
    for (int a = 0; a < rank; ++a) {
      if (local_.empty()) lo[a] = 0, hi[a] = t.shape()[a].size;
      block.whole = block.whole && lo[a] == 0 && hi[a] == t.shape()[a].size;
      dims.push_back({t.shape()[a].name, hi[a] - lo[a]});
    }
    block.begin = lo;
    block.shape = Shape(dims);
    return block;
  }
  int64_t last_fed_bytes() const { return last_fed_bytes_; }

  std::vector<std::string> variable_names() const {
    std::vector<std::string> names;
    for (const Tensor& v : graph_.all_variables()) names.push_back(v.op().name());
    return names;
  }

  Session::SliceLayout variable_slice_layout(const std::string& name) const {
    const Operation& op = find_variable(name);
    const TensorLayout layout = variable_layout(op);
    Session::SliceLayout r;
    r.full = layout.shape();
    r.slice = layout.slice_shape();
    std::set<std::vector<int64_t>> seen;
    for (int64_t p = 0; p < config_.mesh_shape.size(); ++p) {
      std::vector<int64_t> begin = layout.slice_begin(p);
      if (!seen.insert(begin).second) continue;
      r.begins.push_back(std::move(begin));
      r.owners.push_back(p);
    }
    return r;
  }

  std::vector<Session::VariableSlice> variable_slices(const std::string& name) {
    const Operation& op = find_variable(name);
    require_values("variable_slices");
    ensure_initialized(op);
    const TensorLayout layout = variable_layout(op);
    std::vector<Session::VariableSlice> r;
    std::set<std::vector<int64_t>> seen;
    for (int64_t p : local_) {
      std::vector<int64_t> begin = layout.slice_begin(p);
      if (seen.insert(begin).second) r.push_back({begin, cores_[p].at(&op)});
    }
    return r;
  }

  void set_variable_slices(
      const std::string& name,
      const std::function<void(const std::vector<int64_t>&, HostTensor&)>& fill) {
    const Operation& op = find_variable(name);
    require_values("set_variable_slices");
    const TensorLayout layout = variable_layout(op);
    std::map<std::vector<int64_t>, HostTensor> filled;
    for (int64_t p : local_) {
      const std::vector<int64_t> begin = layout.slice_begin(p);
      if (filled.count(begin)) continue;
      HostTensor slice(layout.slice_shape(), op.output(0).dtype());
      fill(begin, slice);
      MTF_CHECK(slice.valid() && slice.shape() == layout.slice_shape());
      filled.emplace(begin, slice);
    }
    for (int64_t p : local_) cores_[p][&op] = filled.at(layout.slice_begin(p));
  }

  uint64_t run_counter() const { return run_counter_; }
  void set_run_counter(uint64_t n) { run_counter_ = n; }
  const MeshConfig& config() const { return config_; }

  std::string program_text(const std::vector<Tensor>& fetches,
                           const std::vector<Operation*>& targets) {
    return program_for(fetches, targets).to_string();
  }
  void check(const std::vector<Tensor>& fetches, const std::vector<Operation*>& targets) {
    program_for(fetches, targets);
  }
  std::string counters_text(const std::vector<Tensor>& fetches,
                            const std::vector<Operation*>& targets) {
    return program_for(fetches, targets).counters().to_string();
  }

  std::string explain(const std::vector<Tensor>& fetches, const std::vector<Operation*>& targets,
                      int max_blocks) {
    return explain_program(program_for(fetches, targets), graph_, config_, fetches, report_.get(),
                           max_blocks);
  }

 private:
  void require_values(const char* what) const {
    if (cost_only()) {
      throw ValueError(std::string("Session::") + what +
                       ": a cost-only simulation holds no tensor values; use "
                       "SimMode::kFunctional for values");
    }
  }

  // Peak memory per core of `program` on the simulated machine; throws
  // OutOfMemoryError when it exceeds the core's memory.
  sim::MemoryEstimate check_memory(const Program& program) const {
    sim::MemoryEstimate est = sim::estimate_memory(
        program, sim::variable_bytes(graph_, config_.layout, config_.mesh_shape));
    const double limit = config_.sim.topology.core_memory;
    if (static_cast<double>(est.peak) > limit) {
      throw OutOfMemoryError(str_cat(
          "layout \"", config_.layout.to_string(), "\" on mesh ", config_.mesh_shape.to_string(),
          " does not fit topology \"", config_.sim.topology.name, "\": ", est.describe(),
          "; each core has ", limit / (1 << 30),
          " GiB. Split the largest tensors over more mesh dimensions, or use more cores"));
    }
    return est;
  }

  // The whole tensor from every processor's slice (replicated pieces are
  // taken from the first processor holding them). In a multi-process job
  // `slices` holds this process's slice only; the others are gathered, so
  // every rank must make the same call.
  HostTensor assemble(const TensorLayout& layout, std::vector<HostTensor> slices,
                      const std::string& what) {
    if (Transport* t = config_.process_transport.get()) {
      const int me = t->rank();
      if (slices.size() == 1 || layout.is_fully_replicated()) return slices[me];
      const HostTensor& mine = slices[me];
      const int64_t n = static_cast<int64_t>(slices.size());
      HostTensor all(Shape({{"__ranks__", n * mine.num_elements()}}), mine.dtype());
      t->begin_collective({0, "gather", what, static_cast<int64_t>(mine.num_bytes())});
      allgather(*t, Group::all(static_cast<int>(n), me), mine.raw_data(), all.raw_data(),
                mine.num_elements(), mine.dtype(),
                collectives::tag_in(collectives::TagSpace::kSessionGather, gathers_++));
      for (int64_t p = 0; p < n; ++p) {
        HostTensor s(mine.shape(), mine.dtype());
        std::memcpy(s.raw_data(), static_cast<const char*>(all.raw_data()) + p * mine.num_bytes(),
                    mine.num_bytes());
        slices[p] = s;
      }
    }
    if (slices.size() == 1 || layout.is_fully_replicated()) return slices[0];
    HostTensor full(layout.shape(), slices[0].dtype());
    const std::vector<int> m2t = layout.mesh_to_tensor();
    for (size_t p = 0; p < slices.size(); ++p) {
      const std::vector<int64_t> c = config_.mesh_shape.coordinates(static_cast<int64_t>(p));
      bool first_copy = true;
      for (size_t a = 0; a < c.size(); ++a) first_copy = first_copy && (m2t[a] >= 0 || c[a] == 0);
      if (first_copy) kernels::insert_block(full, layout.slice_begin(p), slices[p]);
    }
    return full;
  }

  TensorLayout variable_layout(const Operation& op) const {
    const Tensor t = op.output(0);
    return TensorLayout::make(t.shape(), config_.layout, config_.mesh_shape, t.name());
  }

  const Operation& find_variable(const std::string& name) const {
    const Operation* op = graph_.find_operation(name);
    if (!op || op->type() != "variable") {
      throw ValueError("Session: no variable named \"" + name + "\" in the graph");
    }
    return *op;
  }

  // Each processor's slice is drawn from the logical indices it holds, so
  // every mesh and layout starts from the same values.
  void ensure_initialized(const Operation& op) {
    if (cores_[local_[0]].count(&op)) return;
    const auto& var = dynamic_cast<const ops::VariableOp&>(op);
    const TensorLayout layout = variable_layout(op);
    // Processors holding the same slice share one initial buffer (values are
    // never changed in place: an assignment installs a new tensor).
    std::map<std::vector<int64_t>, HostTensor> drawn;
    for (int64_t p : local_) {
      const std::vector<int64_t> begin = layout.slice_begin(p);
      auto it = drawn.find(begin);
      if (it == drawn.end())
        it = drawn.emplace(begin, var.initial_value(layout.slice_shape(), begin)).first;
      cores_[p][&op] = it->second;
    }
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
      key.push_back(op ? reinterpret_cast<intptr_t>(op) : -3);
    }
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    std::vector<const Operation*> t(targets.begin(), targets.end());
    Program program =
        lower(graph_, fetches, t, config_.mesh_shape, config_.layout, config_.reproducible);
    // A simulated host runs (and costs) the program its executor would.
    if (config_.impl != MeshImpl::kSimulated || config_.sim.topology.host_cpus > 0) {
      if (config_.fuse && !config_.reproducible) fuse_updates(program);
      if (config_.fuse) fuse_elementwise(program);
      plan_kernels(program, config_.reproducible);
    }
    return programs_.emplace(key, std::move(program)).first->second;
  }

  // "fetch loss:0, accuracy:0; 12 assignments"
  static std::string program_label(const std::vector<Tensor>& fetches,
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

  std::map<int64_t, FedValue> check_feeds(const Program& program, const Feeds& feeds) {
    std::map<int64_t, FedValue> m;
    for (const auto& [t, value] : feeds) {
      if (!t.valid() || t.op().type() != "placeholder") {
        throw ValueError("Session::run: feed target " + (t.valid() ? t.describe() : "(invalid)") +
                         " is not a placeholder");
      }
      const Session::FeedBlock block = local_feed_block(t);
      const bool whole = value.valid() && value.shape() == t.shape();
      const bool local = value.valid() && value.shape() == block.shape;
      if (!(whole || local) || value.dtype() != t.dtype()) {
        std::string want = str_cat("exactly its shape ", t.shape().to_string());
        if (!block.whole) {
          want += str_cat(" or this process's block ", block.shape.to_string(), " (at ",
                          offsets_text(block.begin), ", Session::local_feed_block)");
        }
        throw ValueError(str_cat("Session::run: placeholder ", t.describe(), " was fed ",
                                 value.valid()
                                     ? value.shape().to_string() + " " + dtype_name(value.dtype())
                                     : std::string("an empty HostTensor"),
                                 "; feed ", want, " and dtype ", dtype_name(t.dtype())));
      }
      m[t.id()] = {value, whole ? std::vector<int64_t>(static_cast<size_t>(t.shape().ndims()), 0)
                                : block.begin};
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
  MeshConfig config_;
  // Per processor: variable slices by variable op.
  std::vector<std::map<const Operation*, HostTensor>> cores_;
  std::map<std::vector<int64_t>, Program> programs_;
  uint64_t run_counter_ = 0;
  std::unique_ptr<sim::Engine> engine_;
  std::map<const Program*, sim::MemoryEstimate> memory_;  // by cached program
  std::vector<int64_t> local_;                            // the processors this process holds
  uint64_t gathers_ = 0;                                  // tags of assembling gathers
  std::unique_ptr<SimReport> report_;
  int64_t last_fed_bytes_ = 0;
  std::map<const Program*, exec::ProgramTimes> profile_times_;  // MeshConfig::profile
};

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
  return impl_->variable_value(name);
}
void Session::set_variable_value(const std::string& name, const HostTensor& value) {
  impl_->set_variable_value(name, value);
}
Session::FeedBlock Session::local_feed_block(const Tensor& placeholder) const {
  return impl_->local_feed_block(placeholder);
}
int64_t Session::last_fed_bytes() const { return impl_->last_fed_bytes(); }
std::vector<std::string> Session::variable_names() const { return impl_->variable_names(); }
Session::SliceLayout Session::variable_slice_layout(const std::string& name) const {
  return impl_->variable_slice_layout(name);
}
std::vector<Session::VariableSlice> Session::variable_slices(const std::string& name) const {
  return impl_->variable_slices(name);
}
void Session::set_variable_slices(
    const std::string& name,
    const std::function<void(const std::vector<int64_t>&, HostTensor&)>& fill) {
  impl_->set_variable_slices(name, fill);
}
uint64_t Session::run_counter() const { return impl_->run_counter(); }
void Session::set_run_counter(uint64_t n) { impl_->set_run_counter(n); }
const MeshConfig& Session::config() const { return impl_->config(); }
const SimReport& Session::simulation_report() const { return impl_->simulation_report(); }
Profile Session::profile() const { return impl_->profile(); }
void Session::reset_profile() { impl_->reset_profile(); }
void Session::check(const std::vector<Tensor>& fetches, const std::vector<Operation*>& targets) {
  impl_->check(fetches, targets);
}
std::string Session::program_text(const std::vector<Tensor>& fetches,
                                  const std::vector<Operation*>& targets) {
  return impl_->program_text(fetches, targets);
}
std::string Session::counters_text(const std::vector<Tensor>& fetches,
                                   const std::vector<Operation*>& targets) {
  return impl_->counters_text(fetches, targets);
}
std::string Session::explain(const std::vector<Tensor>& fetches,
                             const std::vector<Operation*>& targets, int max_blocks) {
  return impl_->explain(fetches, targets, max_blocks);
}

}  // namespace mtf
