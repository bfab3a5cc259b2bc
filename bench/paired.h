// paired.h — A/B timing for ratio targets on a noisy machine.
//
// Every iteration runs the reference and the candidate back to back,
// alternating which goes first, and records the ratio of their times. The
// median of those per-pair ratios cancels the slow drift (CPU frequency,
// neighbours on the VM) that makes two separately timed benchmarks disagree
// by 10-20% here. Counters: "ratio" (reference time / candidate time, so 1.0
// means as fast as the reference), and the throughputs of both.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "run_context.h"

namespace mtf::bench {

//
// `turn` calls of each are timed together per pair (flops is per call): a
// training loop runs its steps back to back, and a turn of several steps
// keeps what one side leaves behind (e.g. BLAS worker threads still spinning
// after a multi-threaded call) from landing on only the other side's first
// step of every pair.
template <typename Ref, typename Candidate>
void run_paired(benchmark::State& state, Ref&& reference, Candidate&& candidate, double flops,
                const char* rate_name = "GFLOP/s", int turn = 1) {
  using Clock = std::chrono::steady_clock;
  auto time = [turn](auto& f) {
    const auto t0 = Clock::now();
    for (int i = 0; i < turn; ++i) f();
    return std::chrono::duration<double>(Clock::now() - t0).count() / turn;
  };
  reference();  // warm caches, pools and thread pools outside the measurement
  candidate();
  std::vector<double> ratios;
  double t_ref = 0, t_cand = 0;
  bool flip = false;
  for (auto _ : state) {
    double a, b;
    if (flip) {
      b = time(candidate);
      a = time(reference);
    } else {
      a = time(reference);
      b = time(candidate);
    }
    flip = !flip;
    ratios.push_back(a / b);
    t_ref += a;
    t_cand += b;
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  const double n = static_cast<double>(state.iterations());
  state.counters["ratio"] = ratios[ratios.size() / 2];
  state.counters[rate_name] = flops * n / t_cand * 1e-9;
  state.counters[std::string("ref_") + rate_name] = flops * n / t_ref * 1e-9;
}

// A console reporter that also prints, at the end, each benchmark's "ratio"
// counter against a target.
class RatioSummary : public benchmark::ConsoleReporter {
 public:
  explicit RatioSummary(std::string title) : title_(std::move(title)) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto it = r.counters.find("ratio");
      if (it != r.counters.end()) ratios_[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%s\n", title_.c_str());
    for (const auto& [name, ratio] : ratios_) std::printf("  %-44s %.3f\n", name.c_str(), ratio);
  }

 private:
  std::string title_;
  std::map<std::string, double> ratios_;
};

// Parses benchmark flags, runs the registered benchmarks with a RatioSummary
// titled `title`, and returns main's exit code.
inline int run_with_summary(int argc, char** argv, const std::string& title) {
  add_run_context();
  benchmark::Initialize(&argc, argv);
  RatioSummary reporter(title);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace mtf::bench
