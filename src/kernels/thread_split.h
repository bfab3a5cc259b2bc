// thread_split.h — a kernel's index space cut into one box per OpenMP thread
// along one axis (a box keeps the operands' strides; only their starts
// move), for kernels whose bits do not depend on the cut: elementwise ones,
// and reductions cut along an axis their output keeps (each output element
// is then reduced whole by one thread, in the same order).
//
// The OpenMP pragma lives in a template: a kernel using it is compiled with
// OpenMP's flags (src/CMakeLists.txt lists them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/thread_count.h"

namespace mtf::kernels {

// The outermost axis with at least `threads` positions and, when `kept` is
// given, a nonzero stride in it (an axis the output keeps); -1 when there is
// none or threads < 2.
inline int split_axis(const std::vector<int64_t>& sizes, int threads,
                      const std::vector<int64_t>* kept = nullptr) {
  for (size_t a = 0; threads > 1 && a < sizes.size(); ++a)
    if ((!kept || (*kept)[a] != 0) && sizes[a] >= threads) return static_cast<int>(a);
  return -1;
}

// run(part_sizes, first) on each thread's box along `axis` (from split_axis,
// not -1): part_sizes is `sizes` with that axis cut to the box's length,
// starting at position `first`.
template <typename Run>
void run_on_threads(const std::vector<int64_t>& sizes, int axis, int threads, Run&& run) {
  const int64_t n = sizes[axis];
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int64_t r0 = n * t / threads, r1 = n * (t + 1) / threads;
    std::vector<int64_t> part = sizes;
    part[axis] = r1 - r0;
    run(part, r0);
  }
}

// run(r0, r1) over `count` rows of a tensor of `elements` values, split over
// up to `most` threads (each row whole on one thread: row kernels' bits do
// not depend on the threads).
template <typename Run>
void run_rows_on_threads(int64_t elements, int64_t count, int most, Run&& run) {
  const int threads = static_cast<int>(std::min<int64_t>(count, threads_for(elements, most)));
  if (threads <= 1) return run(0, count);
  run_on_threads({count}, 0, threads,
                 [&](const std::vector<int64_t>& part, int64_t r0) { run(r0, r0 + part[0]); });
}

}  // namespace mtf::kernels
