// flags.h — a tiny --name=value / --name value command-line parser for the
// examples and tools. Unknown flags and malformed values are errors that name
// the flag and list the known ones.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mtf::cli {

class Flags {
 public:
  // Declares a flag with its default (as text) and help.
  void define(const std::string& name, const std::string& default_value, const std::string& help);
  // Parses argv; throws mtf::ValueError on an unknown flag or a missing value.
  // Returns false (after printing usage) for --help.
  bool parse(int argc, char** argv);
  std::string str(const std::string& name) const;
  int64_t i64(const std::string& name) const;
  double f64(const std::string& name) const;
  // "true" or "false"; anything else is a ValueError naming the flag.
  bool boolean(const std::string& name) const;
  std::string usage() const;

 private:
  // "unknown flag --name; did you mean --close? (... --help lists every flag)".
  std::string unknown_flag(const std::string& name) const;
  struct Flag {
    std::string value, help;
  };
  std::map<std::string, Flag> flags_;
  std::string program_;
};

// The candidate nearest `name` by edits when it is close (a third of the
// name's letters at most), else "": for "did you mean" hints.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace mtf::cli
