#include "cli/flags.h"

#include <iostream>

#include "mtf/errors.h"

namespace mtf::cli {

void Flags::define(const std::string& name, const std::string& default_value,
                   const std::string& help) {
  flags_[name] = {default_value, help};
}

bool Flags::parse(int argc, char** argv) {
  program_ = argc > 0 ? argv[0] : "program";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return false;
    }
    if (arg.rfind("--", 0) != 0)
      throw ValueError("unexpected argument \"" + arg + "\"\n" + usage());
    arg = arg.substr(2);
    std::string value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw ValueError("flag --" + arg + " needs a value\n" + usage());
      value = argv[++i];
    }
    auto it = flags_.find(arg);
    if (it == flags_.end()) throw ValueError("unknown flag --" + arg + "\n" + usage());
    it->second.value = value;
  }
  return true;
}

std::string Flags::str(const std::string& name) const { return flags_.at(name).value; }

namespace {

// Parses the whole of `v` with `parse` (std::stoll / std::stod style).
template <typename T, typename Parse>
T parse_whole(const std::string& name, const std::string& v, Parse parse, const char* what) {
  size_t used = 0;
  T r{};
  try {
    r = parse(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty())
    throw ValueError("flag --" + name + "=\"" + v + "\" is not " + what);
  return r;
}

}  // namespace

int64_t Flags::i64(const std::string& name) const {
  return parse_whole<int64_t>(
      name, str(name), [](const std::string& s, size_t* used) { return std::stoll(s, used); },
      "an integer");
}

double Flags::f64(const std::string& name) const {
  return parse_whole<double>(
      name, str(name), [](const std::string& s, size_t* used) { return std::stod(s, used); },
      "a number");
}

bool Flags::boolean(const std::string& name) const {
  const std::string v = str(name);
  if (v != "true" && v != "false")
    throw ValueError("--" + name + " must be true or false, not \"" + v + "\"");
  return v == "true";
}

std::string Flags::usage() const {
  std::string s = "usage: " + program_ + " [flags]\n";
  for (const auto& [name, f] : flags_)
    s += "  --" + name + " (default \"" + f.value + "\"): " + f.help + "\n";
  return s;
}

}  // namespace mtf::cli
