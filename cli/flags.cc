#include "cli/flags.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "mtf/errors.h"

namespace mtf::cli {

void Flags::define(const std::string& name, const std::string& default_value,
                   const std::string& help) {
  flags_[name] = {default_value, help};
}

namespace {

// Edits (insert, delete, replace) between a and b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // Close: a third of the name's letters at most.
  return !best.empty() && best_distance * 3 <= std::max<size_t>(name.size(), 3) ? best : "";
}

std::string Flags::unknown_flag(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [flag, unused] : flags_) names.push_back(flag);
  std::string text = "unknown flag --" + name;
  const std::string best = closest_name(name, names);
  if (!best.empty()) text += "; did you mean --" + best + "?";
  return text + " (" + program_ + " --help lists every flag)";
}

bool Flags::parse(int argc, char** argv) {
  program_ = argc > 0 ? argv[0] : "program";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return false;
    }
    if (arg.rfind("--", 0) != 0) {
      throw ValueError("unexpected argument \"" + arg + "\": flags are --name value or " +
                       "--name=value (" + program_ + " --help lists every flag)");
    }
    arg = arg.substr(2);
    std::string value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) {
        throw ValueError("flag --" + arg + " needs a value (--" + arg + " VALUE or --" + arg +
                         "=VALUE)");
      }
      value = argv[++i];
    }
    auto it = flags_.find(arg);
    if (it == flags_.end()) throw ValueError(unknown_flag(arg));
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
  const double v = parse_whole<double>(
      name, str(name), [](const std::string& s, size_t* used) { return std::stod(s, used); },
      "a number");
  if (!std::isfinite(v))
    throw ValueError("flag --" + name + "=\"" + str(name) + "\" is not a finite number");
  return v;
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
