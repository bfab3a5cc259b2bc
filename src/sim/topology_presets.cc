// Topology presets: TPU pods and DGX machines with their sources, and the
// host machine file mtf-sim --calibrate writes.
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

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

const char* kA100Sources =
    "DGX A100 (80 GB): 8 A100 SXM4 per node, 19.5 TFLOP/s float32 and 312 TFLOP/s bfloat16 "
    "(dense), 80 GB HBM2e at 2039 GB/s (NVIDIA A100 datasheet); 12 NVLink 3 links of 25 GB/s "
    "per direction into NVSwitch, which carry ~20 GB/s each with NCCL's 128-byte payloads: 240 "
    "GB/s (NCCL maintainer, NVIDIA/nccl-tests issue 149); 8 HDR InfiniBand NICs of 200 Gbit/s per "
    "node (DGX A100 user guide), taken at 94% of line rate as NVIDIA quotes for NDR (46-48 of 50 "
    "GB/s, NVIDIA/nccl-tests issue 290): 23.5 GB/s; latencies (1 us through NVSwitch, 3 us "
    "between nodes) are mtf's assumptions.";
const char* kH100Sources =
    "DGX H100: 8 H100 SXM5 per node, 67 TFLOP/s float32 and 989 TFLOP/s bfloat16 (dense), 80 GB "
    "HBM3 at 3.35 TB/s (NVIDIA H100 datasheet); 18 NVLink 4 links, 450 GB/s per direction into "
    "NVSwitch, carrying 80% of it as NVLink 3 does with 128-byte payloads (NVIDIA/nccl-tests "
    "issue 149): 360 GB/s; 8 ConnectX-7 NDR InfiniBand NICs of 400 Gbit/s per node (DGX H100 "
    "user guide), 47 GB/s each as NVIDIA quotes (46-48 GB/s, NVIDIA/nccl-tests issue 290); "
    "latencies (1 us through NVSwitch, 3 us between nodes) are mtf's assumptions.";

// A DGX cluster of `nodes` nodes of 8 A100s or 8 H100s.
Topology dgx(const std::string& name, int nodes, bool h100) {
  Topology t;
  t.name = name;
  t.network = Topology::Network::kSwitched;
  t.nodes = nodes;
  t.devices_per_node = 8;
  t.cores_per_chip = 1;
  t.node_fabric = Topology::NodeFabric::kSwitch;
  t.nics_per_node = 8;
  t.core_memory = 80 * kGiB;
  t.node_link_latency = 1e-6;
  t.network_latency = 3e-6;
  if (h100) {
    t.core_flops = 67e12;
    t.dtype_flops[static_cast<int>(DType::kBFloat16)] = 989e12;
    t.chip_memory_bandwidth = 3.35e12;
    t.node_link_bandwidth = 0.8 * 450e9;
    t.nic_bandwidth = 47e9;
    t.sources = kH100Sources;
  } else {
    t.core_flops = 19.5e12;
    t.dtype_flops[static_cast<int>(DType::kBFloat16)] = 312e12;
    t.chip_memory_bandwidth = 2039e9;
    t.node_link_bandwidth = 0.8 * 300e9;
    t.nic_bandwidth = 0.94 * 25e9;
    t.sources = kA100Sources;
  }
  t.core_link_bandwidth = t.node_link_bandwidth;
  return t;
}

// "dgx-a100-N" / "dgx-h100-N": the machine of N nodes; false for other names.
bool dgx_preset(const std::string& name, Topology* t) {
  for (const bool h100 : {false, true}) {
    const std::string prefix = h100 ? "dgx-h100-" : "dgx-a100-";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string n = name.substr(prefix.size());
    if (n.empty() || n.size() > 5 || n.find_first_not_of("0123456789") != std::string::npos)
      return false;
    const int nodes = std::stoi(n);
    if (nodes < 1) return false;
    *t = dgx(name, nodes, h100);
    return true;
  }
  return false;
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

}  // namespace

std::string Topology::host_machine_path() {
  if (const char* p = std::getenv("MTF_HOST_MACHINE"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/mtf/host.machine";
}

Topology Topology::preset(const std::string& name) {
  Topology t;
  if (dgx_preset(name, &t)) return t;
  if (name == "host") {
    const std::string path = host_machine_path();
    if (!std::ifstream(path)) {
      throw IoError(
          "the \"host\" preset is this machine as `mtf-sim --calibrate FILE` measured "
          "it, read from \"" +
          path +
          "\" (MTF_HOST_MACHINE, else ~/.cache/mtf/host.machine), which does not "
          "exist: run `mtf-sim --calibrate " +
          path + "` first");
    }
    t.load_file(path);
    return t;
  }
  auto it = presets().find(name);
  if (it == presets().end()) {
    std::string known;
    for (const auto& n : preset_names()) known += " " + n;
    throw ValueError("unknown topology preset \"" + name + "\"; known presets:" + known +
                     " (dgx-a100-N and dgx-h100-N for any number N of nodes)");
  }
  return it->second();
}

std::vector<std::string> Topology::preset_names() {
  std::vector<std::string> r;
  for (const auto& [name, make] : presets()) r.push_back(name);
  for (const char* n : {"dgx-a100-1", "dgx-a100-4", "dgx-h100-1", "dgx-h100-4"}) r.push_back(n);
  r.push_back("host");
  return r;
}

}  // namespace mtf
