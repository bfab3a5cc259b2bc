// step_profile.h — the profiler's recording side: a StepHooks that times
// every step of a program on the wall clock into that program's
// accumulator, and the summary of accumulators as a mtf::Profile. Used by
// the Session when MeshConfig::profile is set; costs two clock reads per
// step.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "exec/step_hooks.h"
#include "mtf/profile.h"

namespace mtf::exec {

// Totals over the runs of one program.
struct ProgramTimes {
  std::string label;
  int64_t runs = 0;
  double run_seconds = 0;
  // By timed processor (the first the process runs, then, when the
  // executor times each, the others: `processors` numbers them), by step
  // index.
  std::vector<int64_t> processors;
  std::vector<std::vector<double>> step_seconds;
};

// Adds each step's wall time to `step_seconds` (by step index, sized to
// the program).
class StepTimer : public StepHooks {
 public:
  StepTimer(const Program& program, std::vector<double>& step_seconds);
  void before_step(const Step&, size_t) override;
  void after_step(const Step&, size_t index) override;

 private:
  std::vector<double>& step_seconds_;
  std::chrono::steady_clock::time_point start_;
};

// Bytes a step moves on one processor: a kernel's inputs and outputs; a
// collective's bytes sent.
double step_bytes(const Program& program, const Step& s);

ProgramProfile summarize(const Program& program, const ProgramTimes& times);

}  // namespace mtf::exec
