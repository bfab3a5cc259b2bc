// predict.h — the mesh configuration that simulates a benchmark's real run
// on a calibrated machine (mtf-sim --calibrate FILE), for step_time's and
// decode_benchmark's --predict: the same mesh, layout and modes, one
// device per rank, the ranks as threads or (under a process transport) as
// processes, over TCP when MTF_SHM=0 keeps them off shared memory.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::bench {

inline MeshConfig simulated_like(const MeshConfig& real, const Topology& machine, SimMode mode) {
  MeshConfig mc;
  mc.mesh_shape = real.mesh_shape;
  mc.layout = real.layout;
  mc.reproducible = real.reproducible;
  mc.fuse = real.fuse;
  mc.impl = MeshImpl::kSimulated;
  mc.sim->mode = mode;
  mc.sim->topology = machine;
  mc.sim->topology.devices_per_node =
      static_cast<int>(std::max<int64_t>(1, real.mesh_shape.size()));
  const char* shm = std::getenv("MTF_SHM");
  mc.sim->topology.host_ranks = !real.process_transport          ? Topology::HostRanks::kThreads
                                : shm && std::string(shm) == "0" ? Topology::HostRanks::kTcp
                                                                 : Topology::HostRanks::kProcesses;
  return mc;
}

// --predict's machines: one machine file, or several separated by commas,
// each read once, here, so that a bad one is an error before any step
// runs: ValueError for an empty name, load_file's errors for a file that
// cannot be read. (A validation predicts a step on every calibration
// round's machine from one run.)
inline std::vector<Topology> machines_to_predict(const std::string& flag) {
  std::vector<Topology> machines;
  if (flag.empty()) return machines;
  size_t from = 0;
  while (true) {
    const size_t comma = flag.find(',', from);
    const std::string file = flag.substr(from, comma == std::string::npos ? comma : comma - from);
    if (file.empty())
      throw ValueError("--predict \"" + flag +
                       "\": an empty machine file name; give machine files separated by commas");
    machines.emplace_back().load_file(file);
    if (comma == std::string::npos) return machines;
    from = comma + 1;
  }
}

// A profiled real run against its simulation, by op type: milliseconds per
// run measured and predicted, most measured first, then the `top_ops` ops
// missed by the most time (ops matched by name; collectives are left out,
// as the simulation times them apart from the ops). For finding which kind
// of step a prediction misses.
inline std::string measured_against_predicted(const Profile& real, const SimReport& sim,
                                              size_t top_ops) {
  if (real.programs.empty()) return "";
  std::map<std::string, double> predicted_of_op;
  for (const SimReport::OpRow& row : sim.ops) predicted_of_op[row.op] += row.time;
  std::map<std::string, std::pair<double, double>> by_type;  // measured, predicted
  std::vector<std::pair<std::string, std::pair<double, double>>> ops;
  for (const ProfileRow& row : real.programs.front().by_op) {
    auto it = predicted_of_op.find(row.name.substr(0, row.name.find(' ')));
    if (it == predicted_of_op.end()) continue;
    by_type[row.type].first += row.seconds;
    by_type[row.type].second += it->second;
    ops.push_back({row.name, {row.seconds, it->second}});
  }
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(by_type.begin(),
                                                                      by_type.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string out = "measured against predicted, by op type (ms per run):\n";
  char line[160];
  for (const auto& [type, t] : rows) {
    std::snprintf(line, sizeof line, "  %-24s %10.3f %10.3f %+7.1f%%\n", type.c_str(),
                  1e3 * t.first, 1e3 * t.second,
                  t.first > 0 ? 100 * (t.second / t.first - 1) : 0.0);
    out += line;
  }
  // The ops the prediction misses by the most time.
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return std::abs(a.second.first - a.second.second) > std::abs(b.second.first - b.second.second);
  });
  // The simulated processors' split, beside the profile's "by processor".
  out += "predicted by processor (ms per run; compute, collectives, idle waiting):\n";
  for (size_t i = 0; i < sim.per_core.size(); ++i) {
    const SimReport::Core& c = sim.per_core[i];
    std::snprintf(line, sizeof line,
                  "  processor %-5zu compute %9.3f   collectives %9.3f   idle %9.3f\n", i,
                  1e3 * c.compute, 1e3 * c.communication, 1e3 * c.idle);
    out += line;
  }
  out += "ops missed by the most time (ms per run):\n";
  for (size_t i = 0; i < ops.size() && i < top_ops; ++i) {
    std::snprintf(line, sizeof line, "  %-60.60s %9.3f %9.3f\n", ops[i].first.c_str(),
                  1e3 * ops[i].second.first, 1e3 * ops[i].second.second);
    out += line;
  }
  return out;
}

// "predicted_ms t1 t2 ...": the step `simulate` gives on each machine, in
// --predict's order, in milliseconds with `decimals` decimals; with
// `profile` (a profiled real run), first the run against its simulation on
// the first machine (measured_against_predicted).
inline void print_predictions(const std::vector<Topology>& machines,
                              const std::function<SimReport(const Topology&)>& simulate,
                              const Profile* profile, size_t top_ops, int decimals) {
  std::string line = "predicted_ms";
  for (size_t i = 0; i < machines.size(); ++i) {
    const SimReport sim = simulate(machines[i]);
    if (profile && i == 0)
      std::printf("%s", measured_against_predicted(*profile, sim, top_ops).c_str());
    char figure[32];
    std::snprintf(figure, sizeof figure, " %.*f", decimals, 1e3 * sim.step_time);
    line += figure;
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace mtf::bench
