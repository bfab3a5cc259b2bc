// training_report.h — what the training examples report of each step beyond
// their printed lines: scalars for TensorBoard (--summary_dir) and for
// scripts (--metrics_jsonl), written by rank 0 alone, and on long runs a
// progress line with the rate and the time left (--progress_every).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/flags.h"
#include "mtf/session.h"
#include "mtf/summary.h"

namespace mtf::cli {

// Declares --summary_dir, --metrics_jsonl and --progress_every.
void define_report_flags(Flags& flags);

// Peak float32 flop/s of the CPUs this process may use (its affinity mask:
// a job's ranks on one machine share them), and in *how where the figure
// comes from: `mtf-sim --calibrate`'s measured matrix-product peak per CPU
// of this host when it was run (Topology::host_machine_path()), else the
// CPUs' clock from /proc/cpuinfo times their float32 flop per cycle (64 on
// Intel cores with AVX-512, 32 with AVX-512 elsewhere or AVX2 and FMA, 16
// otherwise). A job across machines is measured against one machine.
double machine_peak_flops(std::string* how);

class TrainingReport {
 public:
  // `items`: what the rate counts ("tokens", "examples"); steps run up to
  // `last_step`. Opens the summary files on rank 0 (IoError naming a path
  // that cannot be written).
  TrainingReport(const Flags& flags, const MeshConfig& mesh, std::string items, int64_t last_step);
  // Of one training step, all processors together (Session::flops_per_run);
  // without it (or 0) no FLOP utilisation is written.
  void set_flops_per_step(double flops) { flops_per_step_ = flops; }
  // True when this process writes summaries (the example then fetches the
  // gradient norm every step).
  bool writes_summaries() const { return writer_ != nullptr; }

  struct Step {
    double loss = 0;
    double learning_rate = 0;
    double gradient_norm = NAN;  // NaN: not fetched, not written
    double seconds = 0;          // of the training run alone
    double items = 0;            // tokens or examples the step trained on
  };
  // The step's scalars (loss, learning_rate, gradient_norm, step_time in
  // seconds, <items>_per_second, flop_utilization) and, when
  // --progress_every seconds have passed since the last, a progress line:
  // training ms/step and rate, and the time left at the pace so far
  // (evaluations and checkpoints included).
  void step(int64_t step, const Step& figures);
  // Evaluation results at `step`, e.g. {"heldout_loss", 1.2}.
  void evaluation(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // "summaries: TensorBoard file F, metrics M; peak P flop/s (how)", or "".
  std::string describe() const;

 private:
  std::unique_ptr<SummaryWriter> writer_;
  std::string items_, jsonl_path_, peak_how_;
  int64_t last_step_;
  double flops_per_step_ = 0, peak_flops_ = 0;
  double progress_every_;
  int64_t steps_ = 0;
  double seconds_ = 0, items_total_ = 0;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_progress_ = started_;
};

}  // namespace mtf::cli
