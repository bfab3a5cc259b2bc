// Topology settings, overrides, files and validation (presets:
// topology_presets.cc; writing a file: topology_file.cc).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/sim.h"

namespace mtf {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double parse_number(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw ValueError("topology: \"" + key + "\" needs a number, got \"" + value + "\"");
}

int parse_count(const std::string& key, const std::string& value, int lo, int hi) {
  const double v = parse_number(key, value);
  if (v < lo || v > hi || v != std::floor(v)) {
    throw ValueError(detail::str_cat("topology: \"", key, "\" needs an integer from ", lo, " to ",
                                     hi, ", got \"", value, "\""));
  }
  return static_cast<int>(v);
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

int Topology::num_chips() const {
  if (network == Network::kSwitched) return nodes * devices_per_node;
  int n = 1;
  for (int c : chips) n *= c;
  return n;
}
int Topology::num_cores() const { return num_chips() * cores_per_chip; }

double Topology::flops(DType dtype) const {
  if (dtype == bool_) dtype = int32;  // bool ops compute on int32 0 / 1
  const double f = dtype_flops.at(static_cast<size_t>(dtype));
  return f > 0 ? f : core_flops;
}

bool Topology::flat() const {
  return network == Network::kSwitched && node_fabric == NodeFabric::kSwitch;
}

namespace {

// The whole-number settings: each one's field and its largest value.
const std::map<std::string, std::pair<int Topology::*, int>>& count_settings() {
  static const std::map<std::string, std::pair<int Topology::*, int>> counts = {
      {"cores_per_chip", {&Topology::cores_per_chip, 64}},
      {"nodes", {&Topology::nodes, 1 << 20}},
      {"devices_per_node", {&Topology::devices_per_node, 1024}},
      {"nics_per_node", {&Topology::nics_per_node, 1024}},
      {"nodes_per_leaf", {&Topology::nodes_per_leaf, 1 << 20}},
      {"host_cpus", {&Topology::host_cpus, 1 << 16}},
  };
  return counts;
}

// Each number setting's field (the keys are the machine files' and overrides').
using NumberField = double& (*)(Topology&);
// The machine's own figures, then a host's (HostFigures).
std::map<std::string, NumberField> machine_numbers() {
  return {
      {"core_flops", [](Topology& t) -> double& { return t.core_flops; }},
      {"core_memory", [](Topology& t) -> double& { return t.core_memory; }},
      {"chip_memory_bandwidth", [](Topology& t) -> double& { return t.chip_memory_bandwidth; }},
      {"link_bandwidth", [](Topology& t) -> double& { return t.link_bandwidth; }},
      {"link_latency", [](Topology& t) -> double& { return t.link_latency; }},
      {"core_link_bandwidth", [](Topology& t) -> double& { return t.core_link_bandwidth; }},
      {"core_link_latency", [](Topology& t) -> double& { return t.core_link_latency; }},
      {"node_link_bandwidth", [](Topology& t) -> double& { return t.node_link_bandwidth; }},
      {"node_link_latency", [](Topology& t) -> double& { return t.node_link_latency; }},
      {"nic_bandwidth", [](Topology& t) -> double& { return t.nic_bandwidth; }},
      {"network_latency", [](Topology& t) -> double& { return t.network_latency; }},
      {"oversubscription", [](Topology& t) -> double& { return t.oversubscription; }},
  };
}

std::map<std::string, NumberField> host_numbers() {
  return {
      {"gemm_flops", [](Topology& t) -> double& { return t.host.one_cpu.gemm_flops; }},
      {"gemm_half_flops", [](Topology& t) -> double& { return t.host.one_cpu.gemm_half_flops; }},
      {"gemm_narrow", [](Topology& t) -> double& { return t.host.one_cpu.gemm_narrow; }},
      {"gemm_flops_all_cpus", [](Topology& t) -> double& { return t.host.all_cpus.gemm_flops; }},
      {"gemm_half_flops_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_half_flops; }},
      {"gemm_narrow_all_cpus", [](Topology& t) -> double& { return t.host.all_cpus.gemm_narrow; }},
      {"gemm_bfloat16_speedup",
       [](Topology& t) -> double& { return t.host.one_cpu.gemm_bfloat16_speedup; }},
      {"gemm_bfloat16_speedup_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_bfloat16_speedup; }},
      {"gemm_memory_bandwidth",
       [](Topology& t) -> double& { return t.host.one_cpu.gemm_memory_bandwidth; }},
      {"gemm_memory_bandwidth_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_memory_bandwidth; }},
      {"gemm_cache_bandwidth",
       [](Topology& t) -> double& { return t.host.one_cpu.gemm_cache_bandwidth; }},
      {"gemm_cache_bandwidth_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_cache_bandwidth; }},
      {"random_cost", [](Topology& t) -> double& { return t.host.random_cost; }},
      {"conv_in_program", [](Topology& t) -> double& { return t.host.one_cpu.conv_in_program; }},
      {"conv_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.conv_in_program; }},
      {"pool_in_program", [](Topology& t) -> double& { return t.host.one_cpu.pool_in_program; }},
      {"pool_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.pool_in_program; }},
      {"pool_grad_in_program",
       [](Topology& t) -> double& { return t.host.one_cpu.pool_grad_in_program; }},
      {"pool_grad_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.pool_grad_in_program; }},
      {"gemm_threads_from", [](Topology& t) -> double& { return t.host.gemm_threads_from; }},
      {"gemm_call_seconds", [](Topology& t) -> double& { return t.host.gemm_call_seconds; }},
      {"gemm_small_flops", [](Topology& t) -> double& { return t.host.gemm_small_flops; }},
      {"transcendental_cost", [](Topology& t) -> double& { return t.host.transcendental_cost; }},
      {"gemm_cold_seconds_per_byte",
       [](Topology& t) -> double& { return t.host.one_cpu.gemm_cold_seconds_per_byte; }},
      {"gemm_cold_seconds_per_byte_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_cold_seconds_per_byte; }},
      {"gemm_in_program", [](Topology& t) -> double& { return t.host.one_cpu.gemm_in_program; }},
      {"gemm_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.gemm_in_program; }},
      {"elementwise_in_program",
       [](Topology& t) -> double& { return t.host.one_cpu.elementwise_in_program; }},
      {"elementwise_step_overhead",
       [](Topology& t) -> double& { return t.host.one_cpu.elementwise_step_overhead; }},
      {"oversubscribed_in_program",
       [](Topology& t) -> double& { return t.host.oversubscribed_in_program; }},
      {"busy_in_program", [](Topology& t) -> double& { return t.host.busy_in_program; }},
      {"gemm_memory_bandwidth_busy",
       [](Topology& t) -> double& { return t.host.gemm_memory_bandwidth_busy; }},
      {"oversubscribed_wait", [](Topology& t) -> double& { return t.host.oversubscribed_wait; }},
      {"processes_oversubscribed_wait",
       [](Topology& t) -> double& { return t.host.processes_oversubscribed_wait; }},
      {"collective_wake", [](Topology& t) -> double& { return t.host.collective_wake; }},
      {"collective_wake_after",
       [](Topology& t) -> double& { return t.host.collective_wake_after; }},
      {"cpu_spread", [](Topology& t) -> double& { return t.host.cpu_spread; }},
      {"collective_skew", [](Topology& t) -> double& { return t.host.collective_skew; }},
      {"memory_bandwidth_busy",
       [](Topology& t) -> double& { return t.host.memory_bandwidth_busy; }},
      {"fused_in_program", [](Topology& t) -> double& { return t.host.one_cpu.fused_in_program; }},
      {"fused_step_overhead",
       [](Topology& t) -> double& { return t.host.one_cpu.fused_step_overhead; }},
      {"fused_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.fused_in_program; }},
      {"fused_step_overhead_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.fused_step_overhead; }},
      {"elementwise_in_program_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.elementwise_in_program; }},
      {"elementwise_step_overhead_all_cpus",
       [](Topology& t) -> double& { return t.host.all_cpus.elementwise_step_overhead; }},
      {"cache_bytes", [](Topology& t) -> double& { return t.host.cache_bytes; }},
      {"cache_bandwidth", [](Topology& t) -> double& { return t.host.cache_bandwidth; }},
      {"step_overhead", [](Topology& t) -> double& { return t.host.step_overhead; }},
      {"run_overhead", [](Topology& t) -> double& { return t.host.run_overhead; }},
      {"threads_run_overhead", [](Topology& t) -> double& { return t.host.threads_run_overhead; }},
      {"process_link_bandwidth",
       [](Topology& t) -> double& { return t.host.process_link_bandwidth; }},
      {"process_link_latency", [](Topology& t) -> double& { return t.host.process_link_latency; }},
      {"tcp_link_bandwidth", [](Topology& t) -> double& { return t.host.tcp_link_bandwidth; }},
      {"tcp_link_latency", [](Topology& t) -> double& { return t.host.tcp_link_latency; }},
      {"threads_oversubscribed_bandwidth",
       [](Topology& t) -> double& { return t.host.threads_oversubscribed_bandwidth; }},
      {"threads_oversubscribed_latency",
       [](Topology& t) -> double& { return t.host.threads_oversubscribed_latency; }},
      {"processes_oversubscribed_bandwidth",
       [](Topology& t) -> double& { return t.host.processes_oversubscribed_bandwidth; }},
      {"processes_oversubscribed_latency",
       [](Topology& t) -> double& { return t.host.processes_oversubscribed_latency; }},
  };
}

const std::map<std::string, NumberField>& number_settings() {
  static const std::map<std::string, NumberField> numbers = [] {
    std::map<std::string, NumberField> all = machine_numbers();
    for (auto& [key, field] : host_numbers()) all.emplace(key, field);
    return all;
  }();
  return numbers;
}

// Validates `t`, and on failure puts back `before` (a setting that fails
// leaves the topology as it was) and rethrows.
void validate_or_undo(Topology& t, const Topology& before) {
  try {
    t.validate();
  } catch (...) {
    t = before;
    throw;
  }
}

}  // namespace

void Topology::set(const std::string& key, const std::string& value) {
  const Topology before = *this;  // what a value that fails validation leaves
  if ((key == "name" || key == "sources") && value.find_first_of("#\r\n") != std::string::npos) {
    // to_file() could not write it: '#' starts a comment there, a line
    // break ends the entry.
    throw ValueError("topology " + key + " \"" + value +
                     "\" holds '#' or a line break, which a topology file cannot hold");
  }
  if (key == "name") {
    name = value;
  } else if (key == "sources") {
    sources = value;
  } else if (key == "chips") {
    std::vector<int> dims;
    std::stringstream ss(value);
    std::string part;
    while (std::getline(ss, part, 'x')) {
      const double v = parse_number(key, trim(part));
      if (v < 1 || v != std::floor(v) || v > 1e6) {
        throw ValueError("topology: \"chips\" needs positive integer extents like 16x16, got \"" +
                         value + "\"");
      }
      dims.push_back(static_cast<int>(v));
    }
    if (dims.empty() || dims.size() > 3) {
      throw ValueError("topology: \"chips\" needs 1 to 3 extents like 16x16 or 4x4x4, got \"" +
                       value + "\"");
    }
    chips = dims;
  } else if (key == "wraparound") {
    if (value != "true" && value != "false" && value != "1" && value != "0") {
      throw ValueError("topology: \"wraparound\" needs true or false, got \"" + value + "\"");
    }
    wraparound = value == "true" || value == "1";
  } else if (key == "network") {
    if (value != "torus" && value != "switched") {
      throw ValueError("topology: \"network\" needs torus or switched, got \"" + value + "\"");
    }
    network = value == "torus" ? Network::kTorus : Network::kSwitched;
  } else if (key == "node_fabric") {
    if (value != "switch" && value != "ring") {
      throw ValueError("topology: \"node_fabric\" needs switch or ring, got \"" + value + "\"");
    }
    node_fabric = value == "switch" ? NodeFabric::kSwitch : NodeFabric::kRing;
  } else if (key == "host_ranks") {
    if (value == "threads") {
      host_ranks = HostRanks::kThreads;
    } else if (value == "processes") {
      host_ranks = HostRanks::kProcesses;
    } else if (value == "tcp") {
      host_ranks = HostRanks::kTcp;
    } else {
      throw ValueError(
          "topology: \"host_ranks\" needs threads (ranks of one process), processes (a process "
          "per rank, shared memory between them) or tcp (processes over TCP only), got \"" +
          value + "\"");
    }
  } else if (key.rfind("core_flops.", 0) == 0) {
    const std::string dtype = key.substr(11);
    for (DType d : {DType::kFloat32, DType::kInt32, DType::kBFloat16}) {
      if (dtype_name(d) == dtype) {
        dtype_flops[static_cast<size_t>(d)] = parse_number(key, value);
        validate_or_undo(*this, before);
        return;
      }
    }
    throw ValueError("topology: \"" + key +
                     "\" names no dtype; use core_flops.float32, core_flops.bfloat16 or "
                     "core_flops.int32");
  } else {
    const auto& counts = count_settings();
    const auto& numbers = number_settings();
    if (auto c = counts.find(key); c != counts.end()) {
      this->*(c->second.first) = parse_count(
          key, value, key == "nodes_per_leaf" || key == "host_cpus" ? 0 : 1, c->second.second);
    } else if (auto it = numbers.find(key); it != numbers.end()) {
      it->second(*this) = parse_number(key, value);
    } else {
      std::string keys = "name, sources, network, chips, wraparound, node_fabric, host_ranks";
      for (const auto& [k, member] : counts) keys += ", " + k;
      for (const auto& [k, member] : numbers) keys += ", " + k;
      keys += ", core_flops.<dtype>";
      throw ValueError("topology: unknown setting \"" + key + "\"; settings are " + keys);
    }
  }
  validate_or_undo(*this, before);
}

void Topology::apply_overrides(const std::string& spec) {
  std::string item;
  std::string s = spec;
  for (char& c : s)
    if (c == ';') c = ',';
  std::stringstream ss(s);
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw ValueError("topology override \"" + item + "\" needs the form key=value");
    }
    set(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
  }
}

void Topology::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("topology file \"" + path + "\" cannot be opened");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    try {
      if (eq == std::string::npos) throw ValueError("expected `key = value`, got \"" + line + "\"");
      set(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
    } catch (const ValueError& e) {
      throw ValueError(detail::str_cat(path, ":", number, ": ", e.what()));
    }
  }
}

namespace {

// ValueError when any of a host's figures is negative.
void check_host_figures_not_negative(const Topology& t) {
  const HostFigures& h = t.host;
  for (double v : {h.one_cpu.gemm_flops,
                   h.one_cpu.gemm_half_flops,
                   h.one_cpu.gemm_narrow,
                   h.all_cpus.gemm_flops,
                   h.all_cpus.gemm_half_flops,
                   h.all_cpus.gemm_narrow,
                   h.gemm_threads_from,
                   h.gemm_call_seconds,
                   h.gemm_small_flops,
                   h.transcendental_cost,
                   h.random_cost,
                   h.one_cpu.conv_in_program,
                   h.all_cpus.conv_in_program,
                   h.one_cpu.pool_in_program,
                   h.all_cpus.pool_in_program,
                   h.one_cpu.pool_grad_in_program,
                   h.all_cpus.pool_grad_in_program,
                   h.one_cpu.gemm_memory_bandwidth,
                   h.all_cpus.gemm_memory_bandwidth,
                   h.one_cpu.gemm_cache_bandwidth,
                   h.all_cpus.gemm_cache_bandwidth,
                   h.one_cpu.gemm_cold_seconds_per_byte,
                   h.all_cpus.gemm_cold_seconds_per_byte,
                   h.one_cpu.gemm_in_program,
                   h.all_cpus.gemm_in_program,
                   h.one_cpu.elementwise_in_program,
                   h.one_cpu.elementwise_step_overhead,
                   h.all_cpus.elementwise_in_program,
                   h.all_cpus.elementwise_step_overhead,
                   h.one_cpu.fused_in_program,
                   h.one_cpu.fused_step_overhead,
                   h.all_cpus.fused_in_program,
                   h.all_cpus.fused_step_overhead,
                   h.oversubscribed_in_program,
                   h.busy_in_program,
                   h.gemm_memory_bandwidth_busy,
                   h.oversubscribed_wait,
                   h.processes_oversubscribed_wait,
                   h.collective_wake,
                   h.collective_wake_after,
                   h.cpu_spread,
                   h.collective_skew,
                   h.memory_bandwidth_busy,
                   h.cache_bytes,
                   h.cache_bandwidth,
                   h.step_overhead,
                   h.run_overhead,
                   h.threads_run_overhead,
                   h.threads_oversubscribed_bandwidth,
                   h.threads_oversubscribed_latency,
                   h.processes_oversubscribed_bandwidth,
                   h.processes_oversubscribed_latency}) {
    if (v < 0) {
      throw ValueError(
          "topology \"" + t.name +
          "\": the host's figures (gemm_*, host.transcendental_cost, *_in_program, "
          "cache_*, *_overhead, collective_wake*, cpu_spread, collective_skew) cannot be negative");
    }
  }
}

}  // namespace

void Topology::validate() const {
  auto positive = [&](double v, const std::string& what) {
    if (!(v > 0)) {
      throw ValueError(
          detail::str_cat("topology \"", name, "\": ", what, " must be positive, got ", v));
    }
  };
  // Cores counted in 64 bits: chips=100000x100000 must not wrap around.
  int64_t chips_total = 1;
  if (network == Network::kSwitched) {
    chips_total = int64_t{nodes} * devices_per_node;
  } else {
    for (int c : chips) chips_total *= c;
  }
  if (cores_per_chip < 1 || chips_total * cores_per_chip > MeshShape::kMaxProcessors) {
    throw ValueError(detail::str_cat("topology \"", name, "\": ", chips_total, " chips of ",
                                     cores_per_chip, " cores; give between 1 and ",
                                     MeshShape::kMaxProcessors, " cores in all"));
  }
  positive(core_flops, "core_flops");
  positive(core_memory, "core_memory");
  positive(chip_memory_bandwidth, "chip_memory_bandwidth");
  positive(link_bandwidth, "link_bandwidth");
  positive(core_link_bandwidth, "core_link_bandwidth");
  positive(node_link_bandwidth, "node_link_bandwidth");
  positive(nic_bandwidth, "nic_bandwidth");
  for (double f : dtype_flops) {
    if (f < 0) throw ValueError("topology \"" + name + "\": core_flops.<dtype> cannot be negative");
  }
  if (!(oversubscription >= 1)) {
    throw ValueError(detail::str_cat(
        "topology \"", name, "\": oversubscription must be at least 1 (1: non-blocking), got ",
        oversubscription));
  }
  if (nodes < 1 || devices_per_node < 1 || nics_per_node < 1 || nodes_per_leaf < 0) {
    throw ValueError("topology \"" + name +
                     "\": nodes, devices_per_node and nics_per_node must be at least 1");
  }
  positive(host.process_link_bandwidth, "process_link_bandwidth");
  positive(host.tcp_link_bandwidth, "tcp_link_bandwidth");
  positive(host.one_cpu.gemm_bfloat16_speedup, "gemm_bfloat16_speedup");
  positive(host.all_cpus.gemm_bfloat16_speedup, "gemm_bfloat16_speedup_all_cpus");
  // Factors on a step's time (0 would make such steps free).
  for (const HostCompute* c : {&host.one_cpu, &host.all_cpus}) {
    const std::string cpus = c == &host.one_cpu ? "" : "_all_cpus";
    positive(c->gemm_in_program, "gemm_in_program" + cpus);
    positive(c->conv_in_program, "conv_in_program" + cpus);
    positive(c->pool_in_program, "pool_in_program" + cpus);
    positive(c->pool_grad_in_program, "pool_grad_in_program" + cpus);
    positive(c->elementwise_in_program, "elementwise_in_program" + cpus);
  }
  check_host_figures_not_negative(*this);
  if (link_latency < 0 || core_link_latency < 0 || node_link_latency < 0 || network_latency < 0 ||
      host.process_link_latency < 0 || host.tcp_link_latency < 0) {
    throw ValueError("topology \"" + name + "\": latencies cannot be negative");
  }
  if (chips.empty() || chips.size() > 3) {
    throw ValueError("topology \"" + name + "\": needs 1 to 3 chip dimensions");
  }
}

std::string Topology::to_string() const {
  std::string flops = detail::str_cat(core_flops / 1e12, " TFLOP/s");
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kBFloat16})
    if (dtype_flops[static_cast<size_t>(d)] > 0)
      flops += detail::str_cat(" (", dtype_flops[static_cast<size_t>(d)] / 1e12, " ", dtype_name(d),
                               ")");
  if (network == Network::kSwitched && host_cpus > 0) {
    const bool processes = host_ranks != HostRanks::kThreads;
    return detail::str_cat(
        name, ": ", nodes, " host(s) x ", devices_per_node,
        host_ranks == HostRanks::kThreads            ? " threads"
        : processes && host_ranks == HostRanks::kTcp ? " processes over TCP"
                                                     : " processes",
        " on ", host_cpus, " CPUs; matrix products at ", host.one_cpu.gemm_flops / 1e9,
        " GFLOP/s on one thread (half at ", host.one_cpu.gemm_half_flops / 1e6, " MFLOP), ",
        host.all_cpus.gemm_flops / 1e9, " on all (half at ", host.all_cpus.gemm_half_flops / 1e6,
        " MFLOP); elsewhere ", core_flops / 1e9, " GFLOP/s, ", host.cache_bandwidth / 1e9,
        " GB/s up to ", host.cache_bytes / 1024, " KiB and ", chip_memory_bandwidth / 1e9,
        " GB/s beyond; ", host.step_overhead * 1e6, " us per step, ",
        (processes || devices_per_node == 1 ? host.run_overhead : host.threads_run_overhead) * 1e6,
        " us per run; ranks at ", fabric_bandwidth() / 1e9, " GB/s, ", fabric_latency() * 1e6,
        " us");
  }
  if (network == Network::kSwitched) {
    std::string net = detail::str_cat(nics_per_node, " NICs of ", nic_bandwidth / 1e9,
                                      " GB/s per node, ", network_latency * 1e6, " us");
    if (nodes_per_leaf > 0 && oversubscription > 1)
      net += detail::str_cat(", ", oversubscription, ":1 oversubscribed above ", nodes_per_leaf,
                             " nodes");
    return detail::str_cat(
        name, ": ", nodes, " nodes x ", devices_per_node, " devices x ", cores_per_chip,
        " cores = ", num_cores(), " cores; ", flops, " and ", core_memory / kGiB, " GiB per core; ",
        chip_memory_bandwidth / 1e9, " GB/s memory per device; ",
        node_fabric == NodeFabric::kSwitch ? "switch" : "ring", " in a node at ",
        node_link_bandwidth / 1e9, " GB/s per direction, ", node_link_latency * 1e6, " us; ", net);
  }
  std::string dims;
  for (size_t i = 0; i < chips.size(); ++i) dims += (i ? "x" : "") + std::to_string(chips[i]);
  return detail::str_cat(
      name, ": ", dims, " chips", wraparound ? " (torus)" : " (no wraparound)", " x ",
      cores_per_chip, " cores = ", num_cores(), " cores; ", flops, " and ", core_memory / kGiB,
      " GiB per core; ", chip_memory_bandwidth / 1e9, " GB/s memory per chip; ",
      link_bandwidth / 1e9, " GB/s per link direction, ", link_latency * 1e6, " us per hop");
}

}  // namespace mtf
