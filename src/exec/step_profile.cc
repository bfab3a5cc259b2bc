#include "exec/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace mtf::exec {

StepTimer::StepTimer(const Program& program, std::vector<double>& step_seconds)
    : step_seconds_(step_seconds) {
  step_seconds_.resize(program.steps.size(), 0.0);
}

void StepTimer::before_step(const Step&, size_t) { start_ = std::chrono::steady_clock::now(); }

void StepTimer::after_step(const Step&, size_t index) {
  step_seconds_[index] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double step_bytes(const Program& program, const Step& s) {
  if (s.kind != Step::Kind::kCompute && s.kind != Step::Kind::kSplit)
    return static_cast<double>(s.collective.bytes);
  double b = 0;
  for (int slot : s.input_slots) b += static_cast<double>(program.slot_bytes(slot));
  for (int slot : s.output_slots) b += static_cast<double>(program.slot_bytes(slot));
  return b;
}

namespace {

std::vector<ProfileRow> by_time(std::map<std::string, ProfileRow>& rows) {
  std::vector<ProfileRow> v;
  for (auto& [key, row] : rows) v.push_back(std::move(row));
  std::stable_sort(v.begin(), v.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return v;
}

}  // namespace

ProgramProfile summarize(const Program& program, const ProgramTimes& times) {
  ProgramProfile p;
  p.label = times.label;
  p.runs = times.runs;
  if (times.runs == 0) return p;
  const double runs = static_cast<double>(times.runs);
  p.run_seconds = times.run_seconds / runs;
  std::map<std::string, ProfileRow> types, ops;
  static const std::vector<double> kNone;
  const std::vector<double>& first = times.step_seconds.empty() ? kNone : times.step_seconds[0];
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    const double seconds = i < first.size() ? first[i] / runs : 0.0;
    const std::string type = step_op_type(s);
    std::string name =
        s.kind == Step::Kind::kCompute ? s.op->name() : type + "(" + s.op->name() + ")";
    if (s.fusion.ops.size() > 1) name += " [" + s.fusion.expr->describe() + "]";
    for (auto* row : {&types[type], &ops[name]}) {
      row->type = type;
      row->calls += 1;
      row->seconds += seconds;
      row->flops += s.flops;
      row->bytes += step_bytes(program, s);
    }
    types[type].name = type;
    ops[name].name = name;
    p.step_seconds += seconds;
  }
  p.by_type = by_time(types);
  p.by_op = by_time(ops);
  if (times.step_seconds.size() > 1) {
    for (size_t r = 0; r < times.step_seconds.size(); ++r) {
      ProcessorTime t;
      t.processor = r < times.processors.size() ? times.processors[r] : static_cast<int64_t>(r);
      const std::vector<double>& steps = times.step_seconds[r];
      for (size_t i = 0; i < program.steps.size() && i < steps.size(); ++i) {
        const Step::Kind kind = program.steps[i].kind;
        const bool compute = kind == Step::Kind::kCompute || kind == Step::Kind::kSplit;
        (compute ? t.compute_seconds : t.collective_seconds) += steps[i] / runs;
      }
      p.by_processor.push_back(t);
    }
  }
  return p;
}

}  // namespace mtf::exec

namespace mtf {
namespace {

std::string format_row(const ProfileRow& r, double run_seconds, bool with_type) {
  char buf[320];
  const double share = run_seconds > 0 ? 100.0 * r.seconds / run_seconds : 0.0;
  char rate[32];
  // Contractions by their FLOP rate; everything else moves memory.
  if (r.type.rfind("einsum", 0) == 0 && r.flops > 0 && r.seconds > 0)
    std::snprintf(rate, sizeof rate, "%8.1f GFLOP/s", r.flops / r.seconds / 1e9);
  else if (r.seconds > 0)
    std::snprintf(rate, sizeof rate, "%8.2f GB/s   ", r.bytes / r.seconds / 1e9);
  else
    std::snprintf(rate, sizeof rate, "%17s", "");
  std::string name = r.name;
  if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
  std::snprintf(buf, sizeof buf, "  %-44s %-16s %6.0f %9.3f %6.1f%% %s %10.3f\n", name.c_str(),
                with_type ? r.type.c_str() : "", r.calls, r.seconds * 1e3, share, rate,
                r.bytes / 1e6);
  return buf;
}

}  // namespace

std::string ProgramProfile::to_string(int max_ops) const {
  char head[400];
  std::snprintf(head, sizeof head,
                "profile of %s: %lld runs, %.3f ms/run (steps %.3f ms, outside steps %.3f ms)\n",
                label.c_str(), static_cast<long long>(runs), run_seconds * 1e3, step_seconds * 1e3,
                (run_seconds - step_seconds) * 1e3);
  std::string out = head;
  char cols[200];
  std::snprintf(cols, sizeof cols, "  %-44s %-16s %6s %9s %7s %17s %10s\n", "", "", "calls",
                "ms/run", "share", "rate", "MB/run");
  out += "by op type:\n";
  out += cols;
  for (const ProfileRow& r : by_type) out += format_row(r, run_seconds, false);
  out += "top ops:\n";
  out += cols;
  for (size_t i = 0; i < by_op.size() && static_cast<int>(i) < max_ops; ++i)
    out += format_row(by_op[i], run_seconds, true);
  if (!by_processor.empty()) {
    out += "by processor (ms per run; a collective's time includes waiting for the others):\n";
    char line[160];
    for (const ProcessorTime& t : by_processor) {
      std::snprintf(line, sizeof line, "  processor %-6lld compute %9.3f   collectives %9.3f\n",
                    static_cast<long long>(t.processor), t.compute_seconds * 1e3,
                    t.collective_seconds * 1e3);
      out += line;
    }
  }
  return out;
}

std::string Profile::to_string(int max_ops) const {
  if (programs.empty()) return "profile: no run was profiled (set MeshConfig::profile)\n";
  std::string out;
  for (const ProgramProfile& p : programs) out += p.to_string(max_ops);
  return out;
}

}  // namespace mtf
