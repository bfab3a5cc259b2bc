// Layout search (include/mtf/auto_layout.h).
#include "mtf/auto_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include "autolayout/cost_model.h"
#include "core/json.h"
#include "lowering/program.h"
#include "mtf/errors.h"
#include "mtf/session.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

using Clock = std::chrono::steady_clock;

struct Evaluated {
  LayoutCandidate c;
  sim::MemoryEstimate memory;
};

// Better first: fitting before not; fitting by time, then memory; the others
// by memory; then by rules text, so that the order is total and deterministic.
bool better(const LayoutCandidate& a, const LayoutCandidate& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.fits && a.step_time != b.step_time) return a.step_time < b.step_time;
  if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
  if (a.step_time != b.step_time) return a.step_time < b.step_time;
  return a.mesh.to_string() + a.rules.to_string() < b.mesh.to_string() + b.rules.to_string();
}

class Search {
 public:
  Search(Graph& graph, const MeshShape& mesh, const TrainingStep& step,
         const AutoLayoutOptions& options, double limit)
      : graph_(graph),
        mesh_(mesh),
        step_(step),
        options_(options),
        limit_(limit),
        model_(options.topology, mesh),
        targets_(step.targets.begin(), step.targets.end()),
        apply_(step.apply.begin(), step.apply.end()) {
    // The searchable tensor dimensions, heaviest first (total elements of
    // the tensors that have them), with the mesh axes that divide them.
    std::map<std::string, double> weight;
    std::map<std::string, int64_t> size;
    for (const auto& op : graph.operations())
      for (const Tensor& t : op->outputs())
        for (const Dimension& d : t.shape()) {
          weight[d.name] += static_cast<double>(t.shape().num_elements());
          size[d.name] = d.size;
        }
    for (const auto& [name, w] : weight) {
      bool fixed = false;
      for (const auto& p : options.fixed.pairs()) fixed = fixed || p.first == name;
      if (fixed || size[name] < 2) continue;
      std::vector<int> choices{-1};
      for (int a = 0; a < mesh.ndims(); ++a)
        if (mesh.dims()[a].size > 1 && size[name] % mesh.dims()[a].size == 0) choices.push_back(a);
      if (choices.size() > 1) dims_.push_back({name, w, choices});
    }
    std::stable_sort(dims_.begin(), dims_.end(),
                     [](const Dim& a, const Dim& b) { return a.weight > b.weight; });
    space_ = 1;
    for (const Dim& d : dims_) {
      space_ = space_ > (int64_t{1} << 40) / static_cast<int64_t>(d.choices.size())
                   ? (int64_t{1} << 40)
                   : space_ * static_cast<int64_t>(d.choices.size());
    }
  }

  int64_t space() const { return space_; }
  // Whether the deadline cut the search short (then the result depends on
  // the machine's speed; otherwise it is deterministic).
  bool cut_short() const { return cut_short_; }
  int64_t evaluations() const { return static_cast<int64_t>(cache_.size()); }

  // Runs the search until `deadline`; returns whether it was exhaustive.
  bool run(Clock::time_point deadline) {
    std::vector<int> state(dims_.size(), 0);  // indices into choices; 0 = not split
    evaluate(state);
    if (space_ <= options_.exhaustive_limit) {
      for (;;) {
        size_t i = 0;
        for (; i < state.size(); ++i) {
          if (++state[i] < static_cast<int>(dims_[i].choices.size())) break;
          state[i] = 0;
        }
        if (i == state.size()) return true;
        if (past(deadline)) return false;
        evaluate(state);
      }
    }
    // Beam search over dimensions, heaviest first.
    std::vector<std::vector<int>> beam{state};
    for (size_t i = 0; i < dims_.size() && !past(deadline); ++i) {
      std::vector<std::vector<int>> next;
      for (const std::vector<int>& s : beam) {
        for (int c = 0; c < static_cast<int>(dims_[i].choices.size()); ++c) {
          std::vector<int> t = s;
          t[i] = c;
          if (evaluate(t)) next.push_back(t);
        }
      }
      std::sort(next.begin(), next.end(), [&](const auto& a, const auto& b) {
        return better(cache_.at(key(a))->c, cache_.at(key(b))->c);
      });
      next.erase(std::unique(next.begin(), next.end()), next.end());
      if (next.size() > static_cast<size_t>(std::max(1, options_.beam_width)))
        next.resize(std::max(1, options_.beam_width));
      beam = next;
    }
    // Local improvement from each state of the final beam, best first
    // (every layout costed on the way is a candidate).
    for (const std::vector<int>& start : beam) {
      if (past(deadline)) break;
      improve(start, deadline);
    }
    return false;
  }

  // Local improvement of `start` while it helps: change one dimension's
  // mesh axis, exchange the axes of two dimensions, or relabel the mesh axes
  // of the whole layout (a beam can settle on a mirror image of the best).
  std::vector<int> improve(std::vector<int> best, Clock::time_point deadline) {
    auto try_move = [&](const std::vector<int>& t) {
      if (t == best || !evaluate(t)) return false;
      if (!better(cache_.at(key(t))->c, cache_.at(key(best))->c)) return false;
      best = t;
      return true;
    };
    for (bool improved = true; improved && !past(deadline);) {
      improved = false;
      for (size_t i = 0; i < dims_.size(); ++i) {
        for (int c = 0; c < static_cast<int>(dims_[i].choices.size()); ++c) {
          std::vector<int> t = best;
          t[i] = c;
          improved = try_move(t) || improved;
        }
      }
      for (size_t i = 0; i < dims_.size(); ++i) {
        for (size_t j = i + 1; j < dims_.size(); ++j) {
          const int ci = choice_index(j, dims_[i].choices[best[i]]);
          const int cj = choice_index(i, dims_[j].choices[best[j]]);
          if (ci < 0 || cj < 0) continue;
          std::vector<int> t = best;
          t[i] = cj;
          t[j] = ci;
          improved = try_move(t) || improved;
        }
      }
      std::vector<int> perm(mesh_.ndims());
      std::iota(perm.begin(), perm.end(), 0);
      while (std::next_permutation(perm.begin(), perm.end())) {
        std::vector<int> t = best;
        bool ok = true;
        for (size_t i = 0; i < dims_.size() && ok; ++i) {
          const int a = dims_[i].choices[best[i]];
          t[i] = choice_index(i, a < 0 ? -1 : perm[a]);
          ok = t[i] >= 0;
        }
        if (ok) improved = try_move(t) || improved;
      }
    }
    return best;
  }

  // Every legal layout evaluated, best first.
  std::vector<Evaluated> ranked() const {
    std::vector<Evaluated> r;
    for (const auto& [k, e] : cache_)
      if (e) r.push_back(*e);
    std::sort(r.begin(), r.end(),
              [](const Evaluated& a, const Evaluated& b) { return better(a.c, b.c); });
    return r;
  }

 private:
  struct Dim {
    std::string name;
    double weight;
    std::vector<int> choices;  // -1: not split; else a mesh axis
  };

  LayoutRules rules_of(const std::vector<int>& state) const {
    std::vector<std::pair<std::string, std::string>> pairs = options_.fixed.pairs();
    for (size_t i = 0; i < dims_.size(); ++i) {
      const int a = dims_[i].choices[state[i]];
      if (a >= 0) pairs.push_back({dims_[i].name, mesh_.dims()[a].name});
    }
    return LayoutRules(pairs);
  }
  std::string key(const std::vector<int>& state) const { return rules_of(state).to_string(); }
  bool past(Clock::time_point deadline) {
    if (Clock::now() <= deadline) return false;
    cut_short_ = true;
    return true;
  }
  // Index of mesh axis `axis` (-1: not split) among dimension i's choices, or -1.
  int choice_index(size_t i, int axis) const {
    const auto& c = dims_[i].choices;
    const auto it = std::find(c.begin(), c.end(), axis);
    return it == c.end() ? -1 : static_cast<int>(it - c.begin());
  }

  // Costs a layout once; false when it does not lower.
  bool evaluate(const std::vector<int>& state) {
    const LayoutRules rules = rules_of(state);
    const std::string k = rules.to_string();
    auto it = cache_.find(k);
    if (it != cache_.end()) return it->second != nullptr;
    std::unique_ptr<Evaluated> e;
    try {
      const auto variables = sim::variable_bytes(graph_, rules, mesh_);
      sim::CostEstimate est =
          model_.estimate(lower(graph_, step_.fetches, targets_, mesh_, rules), variables);
      est.step_time *= static_cast<double>(step_.runs);
      est.compute *= static_cast<double>(step_.runs);
      est.communication *= static_cast<double>(step_.runs);
      if (!apply_.empty()) {
        const sim::CostEstimate update =
            model_.estimate(lower(graph_, {}, apply_, mesh_, rules), variables);
        est.step_time += update.step_time;
        est.compute += update.compute;
        est.communication += update.communication;
        if (update.memory.peak > est.memory.peak) est.memory = update.memory;
      }
      e = std::make_unique<Evaluated>();
      e->c.mesh = mesh_;
      e->c.rules = rules;
      e->c.step_time = est.step_time;
      e->c.estimated_step_time = est.step_time;
      e->c.compute = est.compute;
      e->c.communication = est.communication;
      e->c.peak_memory = est.memory.peak;
      e->c.fits = static_cast<double>(est.memory.peak) <= limit_;
      e->memory = est.memory;
    } catch (const LayoutError&) {
      // Not a legal layout for this graph.
    }
    const bool legal = e != nullptr;
    cache_.emplace(k, std::move(e));
    return legal;
  }

  Graph& graph_;
  MeshShape mesh_;
  const TrainingStep& step_;
  const AutoLayoutOptions& options_;
  double limit_;
  sim::CostModel model_;
  std::vector<const Operation*> targets_, apply_;
  std::vector<Dim> dims_;
  int64_t space_ = 1;
  bool cut_short_ = false;
  std::map<std::string, std::unique_ptr<Evaluated>> cache_;
};

double memory_limit(const AutoLayoutOptions& o) {
  return o.memory_limit > 0 ? o.memory_limit : o.topology.core_memory;
}

// Re-ranks the best fitting candidates by the cost-only simulation while the
// budget lasts (a simulation is not started when the last one would not fit
// in what remains), and fills the result.
AutoLayoutResult finish(Graph& graph, const TrainingStep& step, const AutoLayoutOptions& options,
                        std::vector<Evaluated> all, Clock::time_point start,
                        Clock::time_point deadline) {
  AutoLayoutResult r;
  std::sort(all.begin(), all.end(),
            [](const Evaluated& a, const Evaluated& b) { return better(a.c, b.c); });
  if (all.empty() || !all.front().c.fits) {
    std::string what = "no layout fits";
    if (!all.empty()) {
      const Evaluated& least = all.front();  // least memory when none fits
      what = detail::str_cat(
          "no layout fits ", memory_limit(options) / double(1 << 30),
          " GiB per core; the least memory is ", double(least.c.peak_memory) / double(1 << 30),
          " GiB per core, with mesh ", least.c.mesh.to_string(), " and layout \"",
          least.c.rules.to_string(), "\": ", least.memory.describe(),
          ". Use more cores, a smaller model or batch, or a larger memory limit");
    }
    throw OutOfMemoryError("auto_layout: " + what);
  }
  // Verify the leader by simulation until a simulated layout leads the
  // ranking (estimates of the others can only be beaten by their own
  // simulation), within the number of simulations and the budget; a
  // simulation is not started when the last one would overrun the deadline.
  double last_sim = 0;
  int simulations = 0;
  auto by_rank = [](const Evaluated& a, const Evaluated& b) { return better(a.c, b.c); };
  while (simulations < options.simulate_top && !all.front().c.simulated && all.front().c.fits) {
    const auto now = Clock::now();
    if (simulations > 0 && now + std::chrono::duration<double>(last_sim) > deadline) break;
    Evaluated& e = all.front();
    MeshConfig cfg;
    cfg.mesh_shape = e.c.mesh;
    cfg.layout = e.c.rules;
    cfg.impl = MeshImpl::kSimulated;
    cfg.sim->topology = options.topology;
    cfg.sim->topology.core_memory = std::max(options.topology.core_memory, memory_limit(options));
    cfg.sim->mode = SimMode::kCostOnly;
    const SimReport rep = simulate_training_step(graph, cfg, step);
    e.c.step_time = rep.step_time;
    e.c.compute = rep.mean_compute();
    e.c.communication = rep.mean_communication() + rep.mean_idle();
    e.c.peak_memory = rep.peak_memory;
    e.c.simulated = true;
    last_sim = std::chrono::duration<double>(Clock::now() - now).count();
    ++simulations;
    std::stable_sort(all.begin(), all.end(), by_rank);
  }
  for (const Evaluated& e : all) r.ranked.push_back(e.c);
  r.mesh = r.ranked.front().mesh;
  r.rules = r.ranked.front().rules;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.runs = step.runs;
  r.update_run = !step.apply.empty();
  return r;
}

void check_step(const TrainingStep& step) {
  if (step.runs < 1) {
    throw ValueError(detail::str_cat("auto_layout: a training step of ", step.runs,
                                     " runs; give 1 (no accumulation) or more"));
  }
}

}  // namespace

std::string AutoLayoutResult::table(int rows) const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-4s %-18s %-48s %12s %12s %8s %8s %12s  %s\n", "rank", "mesh",
                "layout", "step time", "(estimate)", "compute", "comm", "memory/core", "");
  out += line;
  for (int i = 0; i < rows && i < static_cast<int>(ranked.size()); ++i) {
    const LayoutCandidate& c = ranked[i];
    const double total = c.compute + c.communication;
    std::string rules = c.rules.to_string();
    if (rules.empty()) rules = "(replicated)";
    std::snprintf(line, sizeof(line),
                  "%-4d %-18s %-48s %9.3f ms %9.3f ms %7.1f%% %7.1f%% %8.2f GiB  %s%s\n", i + 1,
                  c.mesh.to_string().c_str(), rules.c_str(), c.step_time * 1e3,
                  c.estimated_step_time * 1e3, total > 0 ? 100 * c.compute / total : 0.0,
                  total > 0 ? 100 * c.communication / total : 0.0,
                  static_cast<double>(c.peak_memory) / double(1 << 30),
                  c.simulated ? "simulated" : "estimated", c.fits ? "" : ", does not fit");
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "%lld layouts costed of %lld (%s) in %.2f s; chosen: mesh \"%s\", layout \"%s\"\n",
                static_cast<long long>(evaluations), static_cast<long long>(space),
                exhaustive  ? "exhaustive"
                : cut_short ? "beam search + local improvement, cut short by the time budget"
                            : "beam search + local improvement",
                seconds, mesh.to_string().c_str(), rules.to_string().c_str());
  out += line;
  if (runs > 1 || update_run) {
    std::snprintf(line, sizeof(line),
                  "step times and memory are of a step of %lld run(s)%s (gradient "
                  "accumulation)\n",
                  static_cast<long long>(runs), update_run ? " and the update run" : "");
    out += line;
  }
  return out;
}

std::string AutoLayoutResult::to_json(int rows) const {
  std::ostringstream o;
  o.precision(9);
  o << "{\"mesh\":" << json_string(mesh.to_string())
    << ",\"layout\":" << json_string(rules.to_string()) << ",\"evaluations\":" << evaluations
    << ",\"space\":" << space << ",\"exhaustive\":" << (exhaustive ? "true" : "false")
    << ",\"cut_short\":" << (cut_short ? "true" : "false") << ",\"seconds\":" << seconds
    << ",\"runs\":" << runs << ",\"update_run\":" << (update_run ? "true" : "false")
    << ",\"ranked\":[";
  for (int i = 0; i < rows && i < static_cast<int>(ranked.size()); ++i) {
    const LayoutCandidate& c = ranked[i];
    o << (i ? "," : "") << "{\"mesh\":" << json_string(c.mesh.to_string())
      << ",\"layout\":" << json_string(c.rules.to_string()) << ",\"step_time\":" << c.step_time
      << ",\"estimated_step_time\":" << c.estimated_step_time << ",\"compute\":" << c.compute
      << ",\"communication\":" << c.communication << ",\"peak_memory\":" << c.peak_memory
      << ",\"fits\":" << (c.fits ? "true" : "false")
      << ",\"simulated\":" << (c.simulated ? "true" : "false") << "}";
  }
  o << "]}";
  return o.str();
}

SimReport simulate_training_step(Graph& graph, const MeshConfig& config, const TrainingStep& step,
                                 const Feeds& feeds) {
  check_step(step);
  Session session(graph, config);
  session.run(step.fetches, feeds, step.targets);
  const SimReport first = session.simulation_report();
  SimReport rep = first;
  for (int64_t i = 1; i < step.runs; ++i) {
    // Cost-only runs of one program are identical: one stands for all.
    if (config.sim->mode != SimMode::kCostOnly) session.run(step.fetches, feeds, step.targets);
    rep = rep.followed_by(config.sim->mode == SimMode::kCostOnly ? first
                                                                 : session.simulation_report());
  }
  if (!step.apply.empty()) {
    session.run({}, {}, step.apply);
    rep = rep.followed_by(session.simulation_report());
  }
  return rep;
}

AutoLayoutResult auto_layout(Graph& graph, const MeshShape& mesh,
                             const std::vector<Tensor>& fetches,
                             const std::vector<Operation*>& targets,
                             const AutoLayoutOptions& options) {
  return auto_layout(graph, mesh, TrainingStep{fetches, targets, 1, {}}, options);
}

AutoLayoutResult auto_layout_and_mesh_shape(Graph& graph, int64_t num_cores,
                                            const std::vector<Tensor>& fetches,
                                            const std::vector<Operation*>& targets,
                                            const AutoLayoutOptions& options) {
  return auto_layout_and_mesh_shape(graph, num_cores, TrainingStep{fetches, targets, 1, {}},
                                    options);
}

AutoLayoutResult auto_layout(Graph& graph, const MeshShape& mesh, const TrainingStep& step,
                             const AutoLayoutOptions& options) {
  check_step(step);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.time_budget));
  options.fixed.validate(mesh);
  Search search(graph, mesh, step, options, memory_limit(options));
  // The search gets most of the budget; the simulations what is left.
  const bool exhaustive =
      search.run(start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(options.time_budget * 0.6)));
  AutoLayoutResult r = finish(graph, step, options, search.ranked(), start, deadline);
  r.evaluations = search.evaluations();
  r.space = search.space();
  r.exhaustive = exhaustive;
  r.cut_short = search.cut_short();
  return r;
}

AutoLayoutResult auto_layout_and_mesh_shape(Graph& graph, int64_t num_cores,
                                            const TrainingStep& step,
                                            const AutoLayoutOptions& options) {
  check_step(step);
  if (num_cores < 1) throw ValueError("auto_layout_and_mesh_shape: num_cores must be >= 1");
  if (options.max_dims < 1 || options.max_dims > 3) {
    throw ValueError(detail::str_cat("auto_layout_and_mesh_shape: max_dims is ", options.max_dims,
                                     "; mesh shapes of 1, 2 or 3 dimensions are searched"));
  }
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.time_budget));
  std::vector<std::vector<int64_t>> shapes{{num_cores}};
  for (int64_t a = num_cores; a >= 2; --a) {
    if (num_cores % a) continue;
    const int64_t rest = num_cores / a;
    if (rest >= 2 && rest <= a && options.max_dims >= 2) shapes.push_back({a, rest});
    for (int64_t b = std::min(a, rest); options.max_dims >= 3 && b >= 2; --b)
      if (rest % b == 0 && rest / b >= 2 && rest / b <= b) shapes.push_back({a, b, rest / b});
  }
  static const char* names[] = {"x", "y", "z"};
  std::vector<Evaluated> all;
  int64_t evaluations = 0, space = 0;
  bool exhaustive = true, cut_short = false;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<Dimension> dims;
    for (size_t k = 0; k < shapes[i].size(); ++k) dims.push_back({names[k], shapes[i][k]});
    const MeshShape mesh(dims);
    if (!options.fixed.pairs().empty()) {
      try {
        options.fixed.validate(mesh);
      } catch (const LayoutError&) {
        continue;  // fixed rules name mesh dimensions this shape lacks
      }
    }
    // An equal share of what is left of the search's part of the budget.
    const double left =
        options.time_budget * 0.6 - std::chrono::duration<double>(Clock::now() - start).count();
    Search search(graph, mesh, step, options, memory_limit(options));
    exhaustive =
        search.run(Clock::now() +
                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                       std::max(0.0, left) / double(shapes.size() - i)))) &&
        exhaustive;
    std::vector<Evaluated> r = search.ranked();
    all.insert(all.end(), r.begin(), r.end());
    evaluations += search.evaluations();
    cut_short = cut_short || search.cut_short();
    space += search.space();
  }
  std::sort(all.begin(), all.end(),
            [](const Evaluated& a, const Evaluated& b) { return better(a.c, b.c); });
  AutoLayoutResult r = finish(graph, step, options, std::move(all), start, deadline);
  r.evaluations = evaluations;
  r.space = space;
  r.exhaustive = exhaustive;
  r.cut_short = cut_short;
  return r;
}

}  // namespace mtf
