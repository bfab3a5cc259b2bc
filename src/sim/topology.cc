// Topology presets, overrides and validation.
#include <cmath>
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

const char* kV2Sources =
    "TPU v2: 45 TFLOP/s bf16 and 16 GiB HBM per chip, 2 cores per chip (Google Cloud TPU system "
    "architecture docs); 700 GB/s HBM per chip and 4 ICI links of 496 Gbit/s (~62 GB/s) per "
    "direction (Jouppi et al., 'A Domain-Specific Supercomputer for Training Deep Neural "
    "Networks', CACM 2020, table 3); ~1 us per hop and the on-chip link between the two cores "
    "(taken equal to one ICI link) are mtf's assumptions.";
const char* kV3Sources =
    "TPU v3: 123 TFLOP/s bf16 and 32 GiB HBM per chip, 2 cores per chip (Google Cloud TPU docs); "
    "900 GB/s HBM per chip and 4 ICI links of 656 Gbit/s (~82 GB/s) per direction (Jouppi et "
    "al., CACM 2020, table 3); 2-D torus up to 32x32 chips; hop latency and on-chip link are "
    "mtf's assumptions.";
const char* kV4Sources =
    "TPU v4: 275 TFLOP/s bf16, 32 GiB HBM at 1200 GB/s per chip, one megacore per chip, 3-D "
    "torus with 6 ICI links of ~50 GB/s per direction (Jouppi et al., 'TPU v4', ISCA 2023; "
    "Google Cloud TPU docs); hop latency is mtf's assumption.";

Topology tpu(const std::string& name, std::vector<int> chips, int version) {
  Topology t;
  t.name = name;
  t.chips = std::move(chips);
  t.wraparound = true;
  if (version == 2) {
    t.cores_per_chip = 2;
    t.core_flops = 22.5e12;
    t.core_memory = 8 * kGiB;
    t.chip_memory_bandwidth = 700e9;
    t.link_bandwidth = 62.5e9;
    t.core_link_bandwidth = 62.5e9;
    t.sources = kV2Sources;
  } else if (version == 3) {
    t.cores_per_chip = 2;
    t.core_flops = 61.5e12;
    t.core_memory = 16 * kGiB;
    t.chip_memory_bandwidth = 900e9;
    t.link_bandwidth = 82e9;
    t.core_link_bandwidth = 82e9;
    t.sources = kV3Sources;
  } else {
    t.cores_per_chip = 1;
    t.core_flops = 275e12;
    t.core_memory = 32 * kGiB;
    t.chip_memory_bandwidth = 1200e9;
    t.link_bandwidth = 50e9;
    t.core_link_bandwidth = 50e9;
    t.sources = kV4Sources;
  }
  t.link_latency = 1e-6;
  t.core_link_latency = 0.5e-6;
  return t;
}

const std::map<std::string, std::function<Topology()>>& presets() {
  static const std::map<std::string, std::function<Topology()>> m = {
      {"tpu-v2-8",
       [] {
         return tpu("tpu-v2-8", {2, 2}, 2);
       }},
      {"tpu-v2-32",
       [] {
         return tpu("tpu-v2-32", {4, 4}, 2);
       }},
      {"tpu-v2-128",
       [] {
         return tpu("tpu-v2-128", {8, 8}, 2);
       }},
      {"tpu-v2-512",
       [] {
         return tpu("tpu-v2-512", {16, 16}, 2);
       }},
      {"tpu-v3-8",
       [] {
         return tpu("tpu-v3-8", {2, 2}, 3);
       }},
      {"tpu-v3-32",
       [] {
         return tpu("tpu-v3-32", {4, 4}, 3);
       }},
      {"tpu-v3-128",
       [] {
         return tpu("tpu-v3-128", {8, 8}, 3);
       }},
      {"tpu-v3-512",
       [] {
         return tpu("tpu-v3-512", {16, 16}, 3);
       }},
      {"tpu-v3-2048",
       [] {
         return tpu("tpu-v3-2048", {32, 32}, 3);
       }},
      {"tpu-v4-4x4x4",
       [] {
         return tpu("tpu-v4-4x4x4", {4, 4, 4}, 4);
       }},
      {"tpu-v4-8x8x8",
       [] {
         return tpu("tpu-v4-8x8x8", {8, 8, 8}, 4);
       }},
      {"tpu-v4-16x16x16",
       [] {
         return tpu("tpu-v4-16x16x16", {16, 16, 16}, 4);
       }},
  };
  return m;
}

double parse_number(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw ValueError("topology: \"" + key + "\" needs a number, got \"" + value + "\"");
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

int Topology::num_chips() const {
  int n = 1;
  for (int c : chips) n *= c;
  return n;
}
int Topology::num_cores() const { return num_chips() * cores_per_chip; }

Topology Topology::preset(const std::string& name) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    std::string known;
    for (const auto& n : preset_names()) known += " " + n;
    throw ValueError("unknown topology preset \"" + name + "\"; known presets:" + known);
  }
  return it->second();
}

std::vector<std::string> Topology::preset_names() {
  std::vector<std::string> r;
  for (const auto& [name, make] : presets()) r.push_back(name);
  return r;
}

void Topology::set(const std::string& key, const std::string& value) {
  if (key == "name") {
    name = value;
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
  } else if (key == "cores_per_chip") {
    const double v = parse_number(key, value);
    if (v < 1 || v != std::floor(v) || v > 64) {
      throw ValueError("topology: \"cores_per_chip\" needs an integer from 1 to 64, got \"" +
                       value + "\"");
    }
    cores_per_chip = static_cast<int>(v);
  } else {
    static const std::map<std::string, double Topology::*> numbers = {
        {"core_flops", &Topology::core_flops},
        {"core_memory", &Topology::core_memory},
        {"chip_memory_bandwidth", &Topology::chip_memory_bandwidth},
        {"link_bandwidth", &Topology::link_bandwidth},
        {"link_latency", &Topology::link_latency},
        {"core_link_bandwidth", &Topology::core_link_bandwidth},
        {"core_link_latency", &Topology::core_link_latency},
    };
    auto it = numbers.find(key);
    if (it == numbers.end()) {
      std::string keys = "name, chips, wraparound, cores_per_chip";
      for (const auto& [k, member] : numbers) keys += ", " + k;
      throw ValueError("topology: unknown setting \"" + key + "\"; settings are " + keys);
    }
    this->*(it->second) = parse_number(key, value);
  }
  validate();
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

void Topology::validate() const {
  auto positive = [&](double v, const char* what) {
    if (!(v > 0)) {
      throw ValueError(
          detail::str_cat("topology \"", name, "\": ", what, " must be positive, got ", v));
    }
  };
  positive(core_flops, "core_flops");
  positive(core_memory, "core_memory");
  positive(chip_memory_bandwidth, "chip_memory_bandwidth");
  positive(link_bandwidth, "link_bandwidth");
  positive(core_link_bandwidth, "core_link_bandwidth");
  if (link_latency < 0 || core_link_latency < 0) {
    throw ValueError("topology \"" + name + "\": latencies cannot be negative");
  }
  if (chips.empty() || chips.size() > 3) {
    throw ValueError("topology \"" + name + "\": needs 1 to 3 chip dimensions");
  }
}

std::string Topology::to_string() const {
  std::string dims;
  for (size_t i = 0; i < chips.size(); ++i) dims += (i ? "x" : "") + std::to_string(chips[i]);
  return detail::str_cat(
      name, ": ", dims, " chips", wraparound ? " (torus)" : " (no wraparound)", " x ",
      cores_per_chip, " cores = ", num_cores(), " cores; ", core_flops / 1e12, " TFLOP/s and ",
      core_memory / kGiB, " GiB per core; ", chip_memory_bandwidth / 1e9, " GB/s memory per chip; ",
      link_bandwidth / 1e9, " GB/s per link direction, ", link_latency * 1e6, " us per hop");
}

}  // namespace mtf
