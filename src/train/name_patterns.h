// Variable names matched against a list of regular expressions (ECMAScript,
// searched anywhere in the name, as Mesh TensorFlow's re.search): which
// variables AdamW leaves undecayed and Adafactor leaves unscaled.
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace mtf::train {

class NamePatterns {
 public:
  // Throws ValueError naming `option` and the pattern that does not compile.
  NamePatterns(const std::vector<std::string>& patterns, const std::string& option);
  bool matches(const std::string& name) const;

 private:
  std::vector<std::regex> regexes_;
};

}  // namespace mtf::train
