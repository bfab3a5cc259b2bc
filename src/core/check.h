// check.h — internal invariant checks and message building.
#pragma once

#include <sstream>
#include <string>

#include "mtf/errors.h"

namespace mtf::detail {

// Concatenates its arguments with operator<<.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace mtf::detail

// Our own invariants; a failure is a bug in mtf.
#define MTF_CHECK(cond)                                                                        \
  do {                                                                                         \
    if (!(cond))                                                                               \
      throw ::mtf::InternalError(::mtf::detail::str_cat("mtf internal error: ", #cond, " at ", \
                                                        __FILE__, ":", __LINE__,               \
                                                        " (please report this bug)"));         \
  } while (0)
