// ratio_reporter.h — a console reporter that also remembers each
// benchmark's time per iteration, so a suite can print ratios between
// benchmarks measured in the same run (e.g. einsum vs raw sgemm). With
// repetitions, the median over repetitions is used (these VMs are noisy).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mtf::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        seconds_[r.run_name.function_name] =
            r.real_accumulated_time / static_cast<double>(r.iterations);
      } else if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        // Aggregates report their value in the run's time unit.
        seconds_[r.run_name.function_name] =
            r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Seconds per iteration of a benchmark, by the name it was registered
  // under, or 0 when it did not run.
  double seconds(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

// Registers a benchmark the way the ratio suites run them: wall-clock time,
// five repetitions of at least `min_time` seconds each, medians reported.
template <typename... Args>
benchmark::internal::Benchmark* register_repeated(const std::string& name, double min_time,
                                                  Args&&... args) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->MinTime(min_time)
      ->UseRealTime()
      ->Repetitions(5)
      ->ReportAggregatesOnly(true);
}

// Parses the benchmark flags and runs the registered benchmarks; `reporter`
// then holds their times.
inline void run_benchmarks(int* argc, char** argv, RatioReporter* reporter) {
  benchmark::Initialize(argc, argv);
  benchmark::RunSpecifiedBenchmarks(reporter);
}

}  // namespace mtf::bench
