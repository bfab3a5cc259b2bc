// fuzz_input.h — what the libFuzzer targets share: the input cut into
// lines or fields, a scratch file per process, and the rule that only
// mtf's own errors are expected (anything else — another exception, a
// signal, a sanitizer report — is a finding).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mtf/errors.h"

namespace mtf::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// `s` cut at every `sep` (so n separators give n + 1 fields).
inline std::vector<std::string> fields(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// A file of this process for the targets that read paths ($TMPDIR or /tmp).
inline std::string scratch_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/mtf-fuzz-" + std::to_string(::getpid()) + "-" +
         name;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// Runs `f`; mtf's errors are the expected outcome of bad input.
template <typename F>
void expect_only_mtf_errors(F f) {
  try {
    f();
  } catch (const mtf::Error&) {
  }
}

}  // namespace mtf::fuzz
