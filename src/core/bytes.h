// bytes.h — reading and appending fixed-size values in byte buffers (wire
// headers, file headers). Host byte order, which is little-endian on every
// platform mtf builds for. Internal.
#pragma once

#include <cstring>
#include <string>
#include <vector>

namespace mtf::detail {

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T, typename Buffer>
void append(Buffer& b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof(T));
  std::memcpy(&b[at], &v, sizeof(T));
}

}  // namespace mtf::detail
