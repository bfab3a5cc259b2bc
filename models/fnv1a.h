// fnv1a.h — the 64-bit FNV-1a hash, byte by byte or over a string, for the
// corpus split and the vocabulary cache's keys (stable across platforms and
// runs, unlike std::hash). Internal to models/.
#pragma once

#include <cstdint>
#include <string>

namespace mtf::models {

constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;

inline uint64_t fnv1a_byte(uint64_t h, char c) {
  return (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
}

inline uint64_t fnv1a(const std::string& bytes, uint64_t h = kFnv1aOffset) {
  for (char c : bytes) h = fnv1a_byte(h, c);
  return h;
}

}  // namespace mtf::models
