// Combining calibrations of one host; see calibration_median.h.
#include "calibration_median.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "calibration_timing.h"
#include "mtf/mtf.h"

namespace mtf::tools {
namespace {

// A machine file's `key = value` lines.
std::map<std::string, std::string> file_values(const Topology& t) {
  std::map<std::string, std::string> values;
  std::istringstream in(t.to_file());
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find(" = ");
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return values;
}

}  // namespace

Topology median_of_calibrations(const std::vector<Topology>& rounds) {
  if (rounds.empty()) throw ValueError("median_of_calibrations: no calibrations to combine");
  Topology m = rounds.front();
  if (rounds.size() == 1) return m;
  // Every figure the median of the rounds, but figures fitted together
  // come whole from one round: a product curve's three from the round with
  // the median peak; the busy ranks' factor, skew and spread from the round
  // with the median factor; the crowded ranks' wait, latency and bandwidth (the
  // wait and latency fitted to one measured step at that bandwidth) from
  // the round with the median wait plus latency, what a one-message
  // collective costs. Taken figure by figure, one validation run combined
  // the processes' wait of one round with the latency of another: 8.19 ms
  // for the MLP hybrid on 4 processes where the rounds alone gave 5.75 to
  // 9.02 (median 7.22) and it measured 6.09.
  struct Group {
    std::vector<std::string> keys;
    std::vector<std::string> order_by;  // summed: the rounds' order
  };
  const std::vector<Group> groups = {
      {{"gemm_flops", "gemm_half_flops", "gemm_narrow"}, {"gemm_flops"}},
      // The busy ranks' factor, skew and spread split one measured run
      // between them: one CPU slow reads a lower mean rank and more waiting
      // (0.91 and 0.0073 in one round, 1.03 and 0.0041 in another).
      {{"busy_in_program", "collective_skew", "cpu_spread"}, {"busy_in_program"}},
      {{"gemm_flops_all_cpus", "gemm_half_flops_all_cpus", "gemm_narrow_all_cpus"},
       {"gemm_flops_all_cpus"}},
      {{"oversubscribed_wait", "threads_oversubscribed_latency",
        "threads_oversubscribed_bandwidth"},
       {"oversubscribed_wait", "threads_oversubscribed_latency"}},
      {{"processes_oversubscribed_wait", "processes_oversubscribed_latency",
        "processes_oversubscribed_bandwidth"},
       {"processes_oversubscribed_wait", "processes_oversubscribed_latency"}}};
  std::vector<std::map<std::string, std::string>> values;
  for (const Topology& t : rounds) values.push_back(file_values(t));
  std::map<std::string, bool> in_group;
  for (const Group& g : groups)
    for (const std::string& key : g.keys) in_group[key] = true;
  for (const auto& [key, first] : values.front()) {
    if (in_group.count(key)) continue;
    std::vector<double> v;
    for (const auto& round : values) {
      const auto it = round.find(key);
      if (it == round.end()) break;
      char* end = nullptr;
      const double x = std::strtod(it->second.c_str(), &end);
      if (end == it->second.c_str() || *end != '\0') break;  // not a number: the first round's
      v.push_back(x);
    }
    if (v.size() != values.size()) continue;
    std::ostringstream o;
    o.precision(17);
    o << median(v);
    m.set(key, o.str());
  }
  for (const Group& g : groups) {
    std::vector<std::pair<double, size_t>> order;
    for (size_t r = 0; r < values.size(); ++r) {
      double sum = 0;
      for (const std::string& key : g.order_by)
        sum += std::strtod(values[r].at(key).c_str(), nullptr);
      order.push_back({sum, r});
    }
    std::sort(order.begin(), order.end());
    const size_t r = order[order.size() / 2].second;
    for (const std::string& key : g.keys) m.set(key, values[r].at(key));
  }
  // Medians of medians (mtf-sim --from_calibrations of files that were
  // themselves several rounds) say so once, not once per level.
  const std::string mark = " (each figure the median of ";
  bool nested = false;
  for (const Topology& t : rounds) nested = nested || t.sources.find(mark) != std::string::npos;
  const std::string& first = rounds.front().sources;
  m.sources = first.substr(0, first.find(mark)) + mark + std::to_string(rounds.size()) +
              (nested ? " calibrations, some of them medians of rounds themselves)" : " rounds)");
  m.validate();
  return m;
}

Steadiness steadiness_of_calibrations(const std::vector<Topology>& rounds) {
  struct Figure {
    const char* name;
    double (*read)(const Topology&);
    double scale;
    const char* unit;
  };
  static const Figure kFigures[] = {
      {"matrix products on one thread", [](const Topology& t) { return t.host.one_cpu.gemm_flops; },
       1e-9, " GFLOP/s"},
      {"on every CPU", [](const Topology& t) { return t.host.all_cpus.gemm_flops; }, 1e-9,
       " GFLOP/s"},
      {"bfloat16 products on one thread",
       [](const Topology& t) {
         return t.host.one_cpu.gemm_flops * t.host.one_cpu.gemm_bfloat16_speedup;
       },
       1e-9, " GFLOP/s"},
      {"ranks filling the CPUs (busy_in_program)",
       [](const Topology& t) { return t.host.busy_in_program; }, 1, ""},
  };
  Steadiness s;
  for (const Figure& f : kFigures) {
    std::vector<double> values;
    for (const Topology& t : rounds) values.push_back(f.read(t));
    const auto [lo_at, hi_at] = std::minmax_element(values.begin(), values.end());
    if (values.empty() || *lo_at <= 0) continue;  // a calibration did not measure it
    const double lo = *lo_at, hi = *hi_at, spread = 100 * (hi / lo - 1);
    s.widest = std::max(s.widest, spread);
    char line[200];
    std::snprintf(line, sizeof line, "%s%s %.3g to %.3g%s (%.0f%%)", s.text.empty() ? "" : "; ",
                  f.name, lo * f.scale, hi * f.scale, f.unit, spread);
    s.text += line;
  }
  return s;
}

std::string steadiness_report(const std::vector<Topology>& rounds, double limit_percent) {
  if (rounds.size() < 2) return "";
  const Steadiness s = steadiness_of_calibrations(rounds);
  if (s.text.empty()) return "";
  std::ostringstream o;
  o << "across the " << rounds.size() << " calibrations: " << s.text << "\n";
  if (s.widest > limit_percent)
    o << "this machine's speed moved by up to " << static_cast<int>(s.widest + 0.5)
      << "% between calibrations: a step measured at one moment can be that far from a "
         "prediction on the combined machine, whatever the model (a steadier machine holds "
         "predictions closer)\n";
  return o.str();
}

}  // namespace mtf::tools
