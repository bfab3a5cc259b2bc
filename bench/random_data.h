// random_data.h — uniform [-1, 1) inputs for the benchmarks, reproducible
// by seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "mtf/host_tensor.h"

namespace mtf::bench {

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline HostTensor random_host(const Shape& s, uint32_t seed) {
  return HostTensor::from_floats(s, random_floats(static_cast<size_t>(s.num_elements()), seed));
}

}  // namespace mtf::bench
