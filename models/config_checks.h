// config_checks.h — the checks the models' configs make of their
// fields, with messages naming the model and the field. Internal to models/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "mtf/errors.h"

namespace mtf::models {

// ValueError unless every size is at least 1.
inline void check_sizes(const char* model,
                        std::initializer_list<std::pair<const char*, int64_t>> sizes) {
  for (const auto& [name, value] : sizes) {
    if (value < 1) {
      throw ValueError(std::string(model) + ": " + name + " must be at least 1, got " +
                       std::to_string(value));
    }
  }
}

// ValueError unless 0 <= rate < 1 (a dropout or smoothing rate; NaN fails).
inline void check_rate(const char* model, const char* name, float rate) {
  if (!(rate >= 0.0f && rate < 1.0f)) {
    throw ValueError(std::string(model) + ": " + name + " must be in [0, 1), got " +
                     std::to_string(rate));
  }
}

}  // namespace mtf::models
