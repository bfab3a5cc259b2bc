// Small helpers for the JSON that tools print (mtf-sim --json): a string
// quoted and escaped; control characters are dropped (names never hold
// them).
#pragma once

#include <string>

namespace mtf {

inline std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) r += c;
  }
  return r + "\"";
}

}  // namespace mtf
