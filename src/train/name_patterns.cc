#include "train/name_patterns.h"

#include "mtf/errors.h"

namespace mtf::train {

NamePatterns::NamePatterns(const std::vector<std::string>& patterns, const std::string& option) {
  for (const std::string& p : patterns) {
    try {
      regexes_.emplace_back(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw ValueError(option + ": \"" + p + "\" is not a regular expression (" + e.what() +
                       "); write an ECMAScript pattern such as \"/bias$\"");
    }
  }
}

bool NamePatterns::matches(const std::string& name) const {
  for (const std::regex& r : regexes_)
    if (std::regex_search(name, r)) return true;
  return false;
}

}  // namespace mtf::train
