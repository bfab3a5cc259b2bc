// learning_rate_arg.h — a learning rate given from Python as a number, the
// text of a schedule or an mtf.optimize.LearningRate. A malformed schedule
// raises the parser's ValueError (which names the character and what was
// expected) rather than pybind11's generic "incompatible arguments".
#pragma once

#include <string>

#include "handles.h"
#include "mtf/learning_rate.h"

namespace mtf::python {

inline LearningRate learning_rate_arg(const py::handle& value) {
  if (py::isinstance<LearningRate>(value)) return value.cast<LearningRate>();
  if (py::isinstance<py::str>(value)) return LearningRate(value.cast<std::string>());
  if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)) {
    return LearningRate(value.cast<float>());
  }
  throw py::type_error("a learning rate is a number, a schedule's text or a LearningRate, not " +
                       py::repr(value.get_type()).cast<std::string>());
}

// Binds Config::member (a LearningRate) as a property that takes any of the
// forms above and reads back as a LearningRate.
template <typename Class, typename Config>
void learning_rate_property(Class& c, const char* name, LearningRate Config::*member) {
  c.def_property(
      name, [member](const Config& config) { return config.*member; },
      [member](Config& config, const py::object& value) {
        config.*member = learning_rate_arg(value);
      });
}

}  // namespace mtf::python
