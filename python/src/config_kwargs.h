// config_kwargs.h — model configs built from Python keyword arguments:
// Config(d_model=256, ...) sets any bound field by name, and repr() lists
// them all. An unknown name is a ValueError that lists the fields.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "handles.h"

namespace mtf::python {

template <typename Config>
Config config_from_kwargs(const py::kwargs& kwargs, const std::vector<const char*>& fields,
                          const char* type_name) {
  Config c;
  py::object self = py::cast(&c, py::return_value_policy::reference);
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::cast<std::string>(key);
    bool known = false;
    for (const char* f : fields) known = known || name == f;
    if (!known) {
      std::string listed;
      for (const char* f : fields) listed += std::string(listed.empty() ? "" : ", ") + f;
      throw ValueError(std::string(type_name) + " has no field \"" + name +
                       "\" (fields: " + listed + ")");
    }
    self.attr(key) = value;
  }
  return c;
}

template <typename Config>
std::string config_repr(const Config& c, const std::vector<const char*>& fields,
                        const char* type_name) {
  std::string s = std::string(type_name) + "(";
  py::object self = py::cast(c);
  for (size_t i = 0; i < fields.size(); ++i) {
    s += std::string(fields[i]) + "=" + py::repr(self.attr(fields[i])).cast<std::string>() +
         (i + 1 == fields.size() ? ")" : ", ");
  }
  return s;
}

}  // namespace mtf::python
