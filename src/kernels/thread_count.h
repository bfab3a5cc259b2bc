// thread_count.h — how many threads a kernel that splits its work (see
// thread_split.h) uses for a space of a given size. Free of OpenMP, so that
// the simulator times a step with the count its kernel will use.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mtf::kernels {

// Threads for a kernel over `elements` values: at most `most`, fewer for
// spaces too small to repay waking the others.
inline int threads_for(int64_t elements, int most) {
  constexpr int64_t kMinPerThread = 32768;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(most, elements / kMinPerThread)));
}

}  // namespace mtf::kernels
