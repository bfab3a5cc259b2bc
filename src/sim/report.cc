// SimReport as a table and as JSON.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/json.h"
#include "mtf/errors.h"
#include "mtf/sim.h"

namespace mtf {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

// Seconds with a unit that keeps 3-4 significant digits.
std::string seconds(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.3f ms", s * 1e3);
  return fmt("%.3f us", s * 1e6);
}

std::string bytes(double b) {
  if (b >= (1LL << 30)) return fmt("%.2f GiB", b / (1LL << 30));
  if (b >= (1LL << 20)) return fmt("%.2f MiB", b / (1LL << 20));
  if (b >= 1024) return fmt("%.2f KiB", b / 1024);
  return fmt("%.0f B", b);
}

std::string pad(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}
std::string lpad(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

}  // namespace

SimReport SimReport::followed_by(const SimReport& next) const {
  if (next.topology != topology || next.mesh != mesh || next.cores != cores ||
      next.per_core.size() != per_core.size()) {
    throw ValueError("SimReport::followed_by: a run on " + next.topology + ", mesh " + next.mesh +
                     " cannot follow one on " + topology + ", mesh " + mesh +
                     "; combine the runs of one session");
  }
  SimReport r = *this;
  r.step_time = step_time + next.step_time;
  for (size_t i = 0; i < per_core.size(); ++i) {
    r.per_core[i].compute += next.per_core[i].compute;
    r.per_core[i].communication += next.per_core[i].communication;
    r.per_core[i].idle += next.per_core[i].idle;
    r.per_core[i].bytes_sent += next.per_core[i].bytes_sent;
  }
  r.flops_per_core = flops_per_core + next.flops_per_core;
  r.utilization = r.step_time > 0
                      ? (utilization * step_time + next.utilization * next.step_time) / r.step_time
                      : 0;
  r.messages = messages + next.messages;
  r.link_bytes_max = link_bytes_max + next.link_bytes_max;
  r.link_bytes_mean = link_bytes_mean + next.link_bytes_mean;
  r.links_used = std::max(links_used, next.links_used);
  for (const OpRow& row : next.ops) {
    auto it =
        std::find_if(r.ops.begin(), r.ops.end(), [&](const OpRow& o) { return o.op == row.op; });
    if (it == r.ops.end()) {
      r.ops.push_back(row);
      continue;
    }
    it->flops += row.flops;
    it->bytes += row.bytes;
    it->time += row.time;
  }
  for (const auto& sent : next.sent_by_kind) {
    auto it = std::find_if(r.sent_by_kind.begin(), r.sent_by_kind.end(),
                           [&](const auto& k) { return k.first == sent.first; });
    if (it == r.sent_by_kind.end())
      r.sent_by_kind.push_back(sent);
    else
      it->second += sent.second;
  }
  if (next.peak_memory > peak_memory) {
    r.peak_memory = next.peak_memory;
    r.peak_memory_at = next.peak_memory_at;
  }
  r.peak_activation_memory = std::max(peak_activation_memory, next.peak_activation_memory);
  r.runs = runs + next.runs;
  return r;
}

double SimReport::mean_compute() const {
  double s = 0;
  for (const auto& c : per_core) s += c.compute;
  return per_core.empty() ? 0 : s / per_core.size();
}
double SimReport::mean_communication() const {
  double s = 0;
  for (const auto& c : per_core) s += c.communication;
  return per_core.empty() ? 0 : s / per_core.size();
}
double SimReport::mean_idle() const {
  double s = 0;
  for (const auto& c : per_core) s += c.idle;
  return per_core.empty() ? 0 : s / per_core.size();
}

std::string SimReport::to_table(int max_ops) const {
  std::ostringstream o;
  auto share = [&](double x) { return step_time > 0 ? fmt("%.1f%%", 100 * x / step_time) : "-"; };
  o << "simulated " << mode << " run: " << topology << ", mesh " << mesh << ", layout \"" << layout
    << "\" (" << cores << " cores)\n";
  o << "  step time       " << seconds(step_time);
  if (runs > 1) o << " (" << runs << " runs)";
  o << "\n";
  o << "  per core (mean) compute " << seconds(mean_compute()) << " (" << share(mean_compute())
    << "), communication " << seconds(mean_communication()) << " (" << share(mean_communication())
    << "), idle " << seconds(mean_idle()) << " (" << share(mean_idle()) << ")\n";
  o << "  utilization     " << fmt("%.1f%%", 100 * utilization) << " of peak ("
    << fmt("%.3g", flops_per_core) << " flop per core)\n";
  o << "  peak memory     " << bytes(static_cast<double>(peak_memory)) << " per core, at "
    << peak_memory_at << "; activations " << bytes(static_cast<double>(peak_activation_memory))
    << "\n";
  o << "  messages        " << messages << "; links: " << links_used << " of " << links_total
    << " used, max " << bytes(static_cast<double>(link_bytes_max)) << ", mean "
    << bytes(link_bytes_mean) << "\n";
  if (!sent_by_kind.empty()) {
    o << "  sent per core  ";
    for (size_t i = 0; i < sent_by_kind.size(); ++i) {
      o << (i ? ", " : " ") << sent_by_kind[i].first << " "
        << bytes(static_cast<double>(sent_by_kind[i].second));
    }
    o << "\n";
  }
  for (const auto& r : rings) {
    if (r.size <= 1) continue;
    o << "  ring " << pad(r.axis, 10) << " " << r.size << " cores, hops per step: max "
      << r.max_hops << ", mean " << fmt("%.2f", r.mean_hops) << "\n";
  }
  std::vector<OpRow> sorted = ops;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const OpRow& a, const OpRow& b) { return a.time > b.time; });
  o << "  " << pad("op", 28) << lpad("flops/core", 12) << lpad("sent/core", 12) << lpad("time", 12)
    << lpad("share", 8) << "\n";
  for (int i = 0; i < max_ops && i < static_cast<int>(sorted.size()); ++i) {
    const OpRow& r = sorted[i];
    if (r.time == 0 && r.bytes == 0 && r.flops == 0) continue;
    o << "  " << pad(r.op.size() > 27 ? r.op.substr(0, 27) : r.op, 28)
      << lpad(fmt("%.3g", r.flops), 12) << lpad(bytes(static_cast<double>(r.bytes)), 12)
      << lpad(seconds(r.time), 12) << lpad(share(r.time), 8) << "\n";
  }
  if (static_cast<int>(sorted.size()) > max_ops)
    o << "  (" << sorted.size() - max_ops << " more ops)\n";
  return o.str();
}

std::string SimReport::to_json() const {
  std::ostringstream o;
  o.precision(9);
  o << "{\"topology\":" << json_string(topology) << ",\"mesh\":" << json_string(mesh)
    << ",\"layout\":" << json_string(layout) << ",\"mode\":" << json_string(mode)
    << ",\"cores\":" << cores << ",\"runs\":" << runs << ",\"step_time\":" << step_time
    << ",\"compute\":" << mean_compute() << ",\"communication\":" << mean_communication()
    << ",\"idle\":" << mean_idle() << ",\"utilization\":" << utilization
    << ",\"flops_per_core\":" << flops_per_core << ",\"messages\":" << messages
    << ",\"link_bytes_max\":" << link_bytes_max << ",\"link_bytes_mean\":" << link_bytes_mean
    << ",\"links_used\":" << links_used << ",\"links_total\":" << links_total
    << ",\"peak_memory\":" << peak_memory << ",\"peak_memory_at\":" << json_string(peak_memory_at)
    << ",\"peak_activation_memory\":" << peak_activation_memory << ",\"rings\":[";
  for (size_t i = 0; i < rings.size(); ++i) {
    o << (i ? "," : "") << "{\"axis\":" << json_string(rings[i].axis)
      << ",\"size\":" << rings[i].size << ",\"max_hops\":" << rings[i].max_hops
      << ",\"mean_hops\":" << rings[i].mean_hops << "}";
  }
  o << "],\"sent_by_kind\":{";
  for (size_t i = 0; i < sent_by_kind.size(); ++i)
    o << (i ? "," : "") << json_string(sent_by_kind[i].first) << ":" << sent_by_kind[i].second;
  o << "},\"ops\":[";
  for (size_t i = 0; i < ops.size(); ++i) {
    o << (i ? "," : "") << "{\"op\":" << json_string(ops[i].op) << ",\"flops\":" << ops[i].flops
      << ",\"bytes\":" << ops[i].bytes << ",\"time\":" << ops[i].time << "}";
  }
  o << "],\"per_core\":[";
  for (size_t i = 0; i < per_core.size(); ++i) {
    o << (i ? "," : "") << "{\"compute\":" << per_core[i].compute
      << ",\"communication\":" << per_core[i].communication << ",\"idle\":" << per_core[i].idle
      << ",\"bytes_sent\":" << per_core[i].bytes_sent << "}";
  }
  o << "]}";
  return o.str();
}

}  // namespace mtf
