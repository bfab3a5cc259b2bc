// seed.h — deterministic seeds for random ops and initializers.
#pragma once

#include <cstdint>
#include <string>

namespace mtf::ops {

// A 64-bit seed from a base seed and a name (FNV-1a, then a splitmix64
// finaliser): stable across runs, platforms and layouts.
inline uint64_t derive_seed(uint64_t base, const std::string& name) {
  uint64_t h = 1469598103934665603ull ^ base;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace mtf::ops
