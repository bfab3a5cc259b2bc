// Learning-rate schedules (include/mtf/learning_rate.h): the parser, the host
// formula and the graph built from the optimizer's step.
#include "mtf/learning_rate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/ops.h"

namespace mtf {
namespace {

using Kind = LearningRate::Factor::Kind;

constexpr double kPi = 3.14159265358979323846;

struct FactorForm {
  const char* name;
  Kind kind;
  size_t min_args, max_args;  // max 0: any number (piecewise)
  const char* usage;
};

constexpr FactorForm kForms[] = {
    {"warmup", Kind::kWarmup, 1, 1, "warmup(STEPS)"},
    {"rsqrt", Kind::kRsqrt, 1, 1, "rsqrt(STEPS)"},
    {"linear_decay", Kind::kLinearDecay, 2, 2, "linear_decay(FROM_STEP, TO_STEP)"},
    {"cosine", Kind::kCosine, 1, 2, "cosine(STEPS[, FLOOR])"},
    {"piecewise", Kind::kPiecewise, 1, 0, "piecewise(V0, S1, V1, S2, V2, ...)"},
};

const FactorForm& form_of(Kind kind) {
  for (const auto& f : kForms) {
    if (f.kind == kind) return f;
  }
  MTF_CHECK(false);
  return kForms[0];
}

const char* const kGrammar =
    "a schedule is factors joined by '*' (a number, warmup(S), rsqrt(S), linear_decay(A, B), "
    "cosine(S[, F]), piecewise(V0, S1, V1, ...)), optionally in phases \"P until N then Q\"";

// Recursive-descent parser over the text; every error names the character
// position and what was expected there.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::vector<LearningRate::Phase> schedule() {
    std::vector<LearningRate::Phase> phases;
    for (;;) {
      LearningRate::Phase phase;
      phase.factors = product();
      if (!keyword("until")) {
        phases.push_back(std::move(phase));
        break;
      }
      const size_t at = skip();
      const double n = number();
      if (n < 1 || n != std::floor(n)) fail(at, "a whole step number >= 1 after 'until'");
      phase.until = static_cast<int64_t>(n);
      if (!keyword("then")) fail(skip(), "'then' and the next phase after 'until N'");
      phases.push_back(std::move(phase));
    }
    if (skip() != s_.size()) fail(pos_, "'*', 'until' or the end");
    return phases;
  }

 private:
  size_t skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return pos_;
  }

  bool keyword(const char* word) {
    skip();
    const size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    if (pos_ + n < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[pos_ + n])) || s_[pos_ + n] == '_')) {
      return false;
    }
    pos_ += n;
    return true;
  }

  std::vector<LearningRate::Factor> product() {
    std::vector<LearningRate::Factor> factors{factor()};
    while (skip() < s_.size() && s_[pos_] == '*') {
      ++pos_;
      factors.push_back(factor());
    }
    return factors;
  }

  LearningRate::Factor factor() {
    const size_t at = skip();
    if (at < s_.size() && std::isalpha(static_cast<unsigned char>(s_[at]))) {
      size_t end = at;
      while (end < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) {
        ++end;
      }
      const std::string name = s_.substr(at, end - at);
      for (const auto& f : kForms) {
        if (name == f.name) {
          pos_ = end;
          return call(f, at);
        }
      }
      fail(at, "a number or one of warmup, rsqrt, linear_decay, cosine, piecewise (not '" + name +
                   "')");
    }
    LearningRate::Factor c;
    c.args = {number()};
    if (c.args[0] < 0) fail(at, "a constant >= 0");
    return c;
  }

  LearningRate::Factor call(const FactorForm& f, size_t at) {
    if (skip() >= s_.size() || s_[pos_] != '(') fail(pos_, std::string("'(' after ") + f.name);
    ++pos_;
    LearningRate::Factor out;
    out.kind = f.kind;
    for (;;) {
      out.args.push_back(number());
      if (skip() < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ')') {
        ++pos_;
        break;
      }
      fail(pos_, std::string("',' or ')' in ") + f.usage);
    }
    const bool count_ok =
        out.args.size() >= f.min_args &&
        (f.max_args == 0 ? out.args.size() % 2 == 1 : out.args.size() <= f.max_args);
    if (!count_ok) fail(at, std::string("the arguments of ") + f.usage);
    check_args(out, at);
    return out;
  }

  void check_args(const LearningRate::Factor& f, size_t at) {
    const auto& a = f.args;
    const std::string usage = form_of(f.kind).usage;
    switch (f.kind) {
      case Kind::kWarmup:
      case Kind::kRsqrt:
        if (!(a[0] > 0)) fail(at, usage + " with STEPS > 0");
        break;
      case Kind::kLinearDecay:
        if (!(a[0] >= 0 && a[1] > a[0])) fail(at, usage + " with 0 <= FROM_STEP < TO_STEP");
        break;
      case Kind::kCosine:
        if (!(a[0] > 0) || (a.size() == 2 && !(a[1] >= 0 && a[1] <= 1))) {
          fail(at, usage + " with STEPS > 0 and 0 <= FLOOR <= 1");
        }
        break;
      case Kind::kPiecewise:
        for (size_t i = 0; i < a.size(); i += 2) {
          if (!(a[i] >= 0)) fail(at, usage + " with values >= 0");
          if (i > 0 && !(a[i - 1] >= 1 && (i == 2 || a[i - 1] > a[i - 3]))) {
            fail(at, usage + " with increasing steps >= 1");
          }
        }
        break;
      case Kind::kConstant:
        break;
    }
  }

  double number() {
    const size_t at = skip();
    const char* begin = s_.c_str() + at;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(v)) fail(at, "a finite number");
    pos_ = at + static_cast<size_t>(end - begin);
    return v;
  }

  [[noreturn]] void fail(size_t at, const std::string& expected) const {
    throw ValueError(detail::str_cat("learning rate \"", s_, "\": at character ", at + 1,
                                     ", expected ", expected, "; ", kGrammar));
  }

  const std::string& s_;
  size_t pos_ = 0;
};

double factor_at(const LearningRate::Factor& f, double step) {
  const auto& a = f.args;
  switch (f.kind) {
    case Kind::kConstant:
      return a[0];
    case Kind::kWarmup:
      return std::min(1.0, step / a[0]);
    case Kind::kRsqrt:
      return 1.0 / std::sqrt(std::max(step, a[0]));
    case Kind::kLinearDecay:
      return std::clamp((a[1] - step) / (a[1] - a[0]), 0.0, 1.0);
    case Kind::kCosine: {
      const double floor = a.size() == 2 ? a[1] : 0.0;
      return floor + (1 - floor) * 0.5 * (1 + std::cos(kPi * std::min(step, a[0]) / a[0]));
    }
    case Kind::kPiecewise: {
      double v = a[0];
      for (size_t i = 1; i + 1 < a.size(); i += 2) {
        if (step >= a[i]) v = a[i + 1];
      }
      return v;
    }
  }
  return 0;
}

Tensor factor_tensor(const LearningRate::Factor& f, const Tensor& step) {
  const Mesh& mesh = step.mesh();
  const auto& a = f.args;
  const auto c = [&](double v) { return constant(mesh, static_cast<float>(v)); };
  switch (f.kind) {
    case Kind::kConstant:
      return c(a[0]);
    case Kind::kWarmup:
      return minimum(step / static_cast<float>(a[0]), c(1));
    case Kind::kRsqrt:
      return rsqrt(maximum(step, c(a[0])));
    case Kind::kLinearDecay:
      return minimum(
          maximum((static_cast<float>(a[1]) - step) / static_cast<float>(a[1] - a[0]), c(0)), c(1));
    case Kind::kCosine: {
      const double floor = a.size() == 2 ? a[1] : 0.0;
      const Tensor half_cos =
          (cos(minimum(step, c(a[0])) * static_cast<float>(kPi / a[0])) + 1.0f) * 0.5f;
      return half_cos * static_cast<float>(1 - floor) + static_cast<float>(floor);
    }
    case Kind::kPiecewise: {
      Tensor v = c(a[0]);
      for (size_t i = 1; i + 1 < a.size(); i += 2) {
        v = where(greater_equal(step, c(a[i])), c(a[i + 1]), v);
      }
      return v;
    }
  }
  return c(0);
}

std::string number_text(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

LearningRate::LearningRate(float value) {
  if (!std::isfinite(value) || value < 0) {
    throw ValueError(detail::str_cat("learning rate ", value, ": need a finite rate >= 0"));
  }
  Factor f;
  f.args = {value};
  phases_ = {Phase{{f}, 0}};
}

LearningRate::LearningRate(const std::string& text) : phases_(Parser(text).schedule()) {}

bool LearningRate::is_constant() const {
  return phases_.size() == 1 && phases_[0].factors.size() == 1 &&
         phases_[0].factors[0].kind == Factor::Kind::kConstant;
}

float LearningRate::constant_value() const {
  if (!is_constant()) throw ValueError("learning rate " + str() + " is not a constant");
  return static_cast<float>(phases_[0].factors[0].args[0]);
}

double LearningRate::at(int64_t step) const {
  double s = static_cast<double>(step);
  for (const Phase& p : phases_) {
    if (p.until == 0 || s <= static_cast<double>(p.until)) {
      double v = 1;
      for (const Factor& f : p.factors) v *= factor_at(f, s);
      return v;
    }
    s -= static_cast<double>(p.until);
  }
  return 0;
}

Tensor LearningRate::build(const Tensor& step) const {
  if (step.dtype() != float32 || step.shape().ndims() != 0) {
    throw ValueError("LearningRate::build: the step must be a float32 scalar, got " +
                     step.describe());
  }
  // Phases from the last back: where(step <= until, this phase, the rest).
  const auto product = [](const Phase& p, const Tensor& s) {
    Tensor v = factor_tensor(p.factors[0], s);
    for (size_t i = 1; i < p.factors.size(); ++i) v = v * factor_tensor(p.factors[i], s);
    return v;
  };
  std::vector<Tensor> local_steps{step};
  for (size_t i = 0; i + 1 < phases_.size(); ++i) {
    local_steps.push_back(local_steps.back() - static_cast<float>(phases_[i].until));
  }
  Tensor rate = product(phases_.back(), local_steps.back());
  for (size_t i = phases_.size() - 1; i-- > 0;) {
    const Tensor in_phase =
        less_equal(local_steps[i], constant(step.mesh(), static_cast<float>(phases_[i].until)));
    rate = where(in_phase, product(phases_[i], local_steps[i]), rate);
  }
  return rate;
}

std::string LearningRate::str() const {
  std::string out;
  for (const Phase& p : phases_) {
    for (size_t i = 0; i < p.factors.size(); ++i) {
      const Factor& f = p.factors[i];
      if (i > 0) out += "*";
      if (f.kind == Factor::Kind::kConstant) {
        out += number_text(f.args[0]);
        continue;
      }
      out += form_of(f.kind).name;
      out += "(";
      for (size_t j = 0; j < f.args.size(); ++j) {
        out += (j ? ", " : "") + number_text(f.args[j]);
      }
      out += ")";
    }
    if (p.until > 0) out += " until " + std::to_string(p.until) + " then ";
  }
  return out;
}

}  // namespace mtf
