// rss.h — the process's resident memory from /proc/self/status, for
// benchmarks that report memory beside time (Linux only; 0 elsewhere).
#pragma once

#include <fstream>
#include <string>

namespace mtf::bench {

// "VmRSS" (now) or "VmHWM" (the peak) in MiB.
inline double status_mib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0)
      return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return 0;
}

// Starts the peak ("VmHWM") afresh at the current resident size.
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace mtf::bench
