#include "cli/training_report.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "mtf/errors.h"
#include "mtf/sim.h"

namespace mtf::cli {

void define_report_flags(Flags& flags) {
  flags.define("summary_dir", "",
               "write each step's loss, learning rate, gradient norm, step time, rate and FLOP "
               "utilisation as TensorBoard event files into this directory (rank 0)");
  flags.define("metrics_jsonl", "",
               "append the same scalars to this file, one JSON object per step (rank 0)");
  flags.define("progress_every", "60",
               "print a progress line (rate, time left) every this many seconds (0: never)");
}

namespace {

// The first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    k.erase(k.find_last_not_of(" \t") + 1);
    if (k == key) return line.substr(std::min(line.size(), colon + 2));
  }
  return "";
}

// The CPUs this process may run on (its affinity mask), at least 1.
int64_t usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

double machine_peak_flops(std::string* how) {
  const int64_t cpus = usable_cpus();
  std::ifstream calibrated(Topology::host_machine_path());
  if (calibrated) {
    try {
      const Topology host = Topology::preset("host");
      const double per_cpu = host.host.one_cpu.gemm_flops;
      if (per_cpu > 0) {
        *how = "mtf-sim --calibrate's matrix-product peak of this host x " + std::to_string(cpus) +
               " CPUs";
        return per_cpu * static_cast<double>(cpus);
      }
    } catch (const Error&) {
      // A stale or damaged machine file: fall back to the estimate.
    }
  }
  const double mhz = std::atof(cpuinfo("cpu MHz").c_str());
  const bool intel = cpuinfo("vendor_id") == "GenuineIntel";
  std::istringstream flags(" " + cpuinfo("flags") + " ");
  bool avx512 = false, avx2 = false, fma = false;
  for (std::string f; flags >> f;) {
    avx512 = avx512 || f == "avx512f";
    avx2 = avx2 || f == "avx2";
    fma = fma || f == "fma";
  }
  // float32 lanes x 2 (multiply-add) x FMA pipes: Intel's server cores run
  // two 512-bit FMAs a cycle, AMD's Zen 4 two 256-bit ones, AVX2 cores two
  // 256-bit ones.
  const int per_cycle = avx512 && intel ? 64 : (avx512 || (avx2 && fma)) ? 32 : 16;
  char text[160];
  std::snprintf(text, sizeof(text), "estimate: %lld CPUs x %.0f MHz x %d float32 flop/cycle",
                static_cast<long long>(cpus), mhz, per_cycle);
  *how = text;
  return static_cast<double>(cpus) * mhz * 1e6 * per_cycle;
}

TrainingReport::TrainingReport(const Flags& flags, const MeshConfig& mesh, std::string items,
                               int64_t last_step)
    : items_(std::move(items)),
      last_step_(last_step),
      progress_every_(flags.f64("progress_every")) {
  if (!(progress_every_ >= 0)) throw ValueError("--progress_every must be >= 0 seconds");
  const bool rank0 = !mesh.process_transport || mesh.process_transport->rank() == 0;
  const std::string dir = flags.str("summary_dir");
  jsonl_path_ = flags.str("metrics_jsonl");
  if (rank0 && (!dir.empty() || !jsonl_path_.empty())) {
    writer_ = std::make_unique<SummaryWriter>(dir, jsonl_path_);
    peak_flops_ = machine_peak_flops(&peak_how_);
  }
}

std::string TrainingReport::describe() const {
  if (!writer_) return "";
  std::string s = "summaries:";
  if (!writer_->event_file().empty()) s += " TensorBoard file " + writer_->event_file();
  if (!jsonl_path_.empty()) s += " metrics " + jsonl_path_;
  char peak[64];
  std::snprintf(peak, sizeof(peak), "; peak %.3g flop/s (", peak_flops_);
  return s + peak + peak_how_ + ")";
}

void TrainingReport::step(int64_t step, const Step& f) {
  ++steps_;
  seconds_ += f.seconds;
  items_total_ += f.items;
  if (writer_) {
    std::vector<std::pair<std::string, double>> scalars = {{"loss", f.loss},
                                                           {"learning_rate", f.learning_rate}};
    if (!std::isnan(f.gradient_norm)) scalars.emplace_back("gradient_norm", f.gradient_norm);
    scalars.emplace_back("step_time", f.seconds);
    if (f.seconds > 0) {
      scalars.emplace_back(items_ + "_per_second", f.items / f.seconds);
      if (flops_per_step_ > 0 && peak_flops_ > 0)
        scalars.emplace_back("flop_utilization", flops_per_step_ / f.seconds / peak_flops_);
    }
    writer_->write(step, scalars);
  }
  const auto now = std::chrono::steady_clock::now();
  if (progress_every_ > 0 && step < last_step_ &&
      std::chrono::duration<double>(now - last_progress_).count() >= progress_every_) {
    last_progress_ = now;
    // Time left at the pace so far, evaluations and checkpoints included.
    const double wall_per_step =
        std::chrono::duration<double>(now - started_).count() / static_cast<double>(steps_);
    std::printf("progress: step %lld of %lld (%.1f%%), %.1f ms/step, %.0f %s/s, %.1f min left\n",
                static_cast<long long>(step), static_cast<long long>(last_step_),
                100.0 * static_cast<double>(step) / static_cast<double>(last_step_),
                1000 * seconds_ / static_cast<double>(steps_), items_total_ / seconds_,
                items_.c_str(), wall_per_step * static_cast<double>(last_step_ - step) / 60);
    std::fflush(stdout);
  }
}

void TrainingReport::evaluation(int64_t step,
                                const std::vector<std::pair<std::string, double>>& scalars) {
  if (writer_) writer_->write(step, scalars);
}

}  // namespace mtf::cli
