#include "mtf/shape.h"

#include <cctype>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

std::string Dimension::to_string() const { return name + ":" + std::to_string(size); }

Dimension DimRef::in(const Shape& shape, const std::string& op, const std::string& input) const {
  const int i = shape.index_of(name_);
  if (i < 0) {
    throw ShapeError(detail::str_cat(op, ": unknown dimension \"", name_, "\": input ", input,
                                     " has no dimension of that name"));
  }
  if (size_ >= 0 && shape[i].size != size_) {
    throw ShapeError(detail::str_cat(op, ": dimension ", Dimension{name_, size_}.to_string(),
                                     " disagrees in size with input ", input,
                                     "; pass the input's dimension or just its name"));
  }
  return shape[i];
}

Shape::Shape(std::vector<Dimension> dims) : dims_(std::move(dims)) { validate(); }
Shape::Shape(std::initializer_list<Dimension> dims) : dims_(dims) { validate(); }

namespace {

std::vector<Dimension> parse_shape(const std::string& spec) {
  std::vector<Dimension> dims;
  for (const auto& [name, size_text] : parse_pairs(spec, "shape")) {
    size_t used = 0;
    long long size = -1;
    try {
      size = std::stoll(size_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != size_text.size() || size < 0) {
      throw ShapeError(detail::str_cat("malformed shape string \"", spec, "\": size \"", size_text,
                                       "\" of dimension \"", name,
                                       "\" is not a non-negative integer (expected name:size, "
                                       "e.g. \"batch:100;hidden:1024\")"));
    }
    dims.push_back({name, size});
  }
  return dims;
}

}  // namespace

Shape::Shape(const char* spec) : Shape(std::string(spec)) {}
Shape::Shape(const std::string& spec) : dims_(parse_shape(spec)) { validate(); }

std::vector<std::pair<std::string, std::string>> parse_pairs(const std::string& spec,
                                                             const std::string& what) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string token;
  auto flush = [&]() {
    if (token.empty()) return;
    size_t colon = token.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == token.size() ||
        token.find(':', colon + 1) != std::string::npos) {
      throw ShapeError(detail::str_cat("malformed ", what, " string \"", spec, "\": piece \"",
                                       token,
                                       "\" is not of the form a:b (pieces are separated by ';', "
                                       "',', '.' or spaces, e.g. \"x:4;y:8\")"));
    }
    pairs.emplace_back(token.substr(0, colon), token.substr(colon + 1));
    token.clear();
  };
  for (char c : spec) {
    if (c == ';' || c == ',' || c == '.' || std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else {
      token.push_back(c);
    }
  }
  flush();
  // Separators and nothing else (";;;"): a slip, not the empty one.
  if (pairs.empty() && spec.find_first_of(";,.") != std::string::npos) {
    throw ShapeError(detail::str_cat("malformed ", what, " string \"", spec,
                                     "\": separators but no a:b piece (e.g. \"x:4;y:8\"; \"\" ",
                                     "for none)"));
  }
  return pairs;
}

void Shape::validate() const {
  int64_t elements = 1;
  for (size_t i = 0; i < dims_.size(); ++i) {
    const Dimension& d = dims_[i];
    if (d.name.empty()) {
      throw ShapeError(detail::str_cat("dimension ", i, " of shape ", to_string(),
                                       " has an empty name; every dimension needs a name"));
    }
    if (d.size < 0) {
      throw ShapeError(detail::str_cat("dimension \"", d.name, "\" of shape ", to_string(),
                                       " has negative size ", d.size));
    }
    if (d.size > 0 && elements > (int64_t{1} << 62) / d.size) {
      throw ShapeError(detail::str_cat("shape ", to_string(), " has more than 2^62 elements"));
    }
    elements *= d.size;
    for (size_t j = 0; j < i; ++j) {
      if (dims_[j].name == d.name) {
        throw ShapeError(detail::str_cat("duplicate dimension \"", d.name, "\" in shape ",
                                         to_string(),
                                         "; a shape may name each dimension once (rename one)"));
      }
    }
  }
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (const auto& d : dims_) n *= d.size;
  return n;
}

std::vector<int64_t> Shape::sizes() const {
  std::vector<int64_t> s;
  for (const auto& d : dims_) s.push_back(d.size);
  return s;
}

std::vector<std::string> Shape::names() const {
  std::vector<std::string> s;
  for (const auto& d : dims_) s.push_back(d.name);
  return s;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size(), 1);
  for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims_[i + 1].size;
  return s;
}

bool Shape::contains(const Dimension& d) const {
  int i = index_of(d.name);
  return i >= 0 && dims_[i].size == d.size;
}

int Shape::index_of(const std::string& name) const {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].name == name) return static_cast<int>(i);
  return -1;
}

const Dimension& Shape::get(const std::string& name) const {
  int i = index_of(name);
  if (i < 0) {
    throw ShapeError(detail::str_cat("unknown dimension \"", name, "\": shape ", to_string(),
                                     " has no dimension of that name"));
  }
  return dims_[i];
}

Shape Shape::rename(const std::string& old_name, const std::string& new_name) const {
  std::vector<Dimension> d = dims_;
  d[index_of(get(old_name).name)].name = new_name;
  return Shape(d);
}

Shape Shape::resize(const std::string& name, int64_t new_size) const {
  std::vector<Dimension> d = dims_;
  d[index_of(get(name).name)].size = new_size;
  return Shape(d);
}

Shape Shape::minus(const Shape& other) const {
  std::vector<Dimension> d;
  for (const auto& x : dims_)
    if (!other.contains(x.name)) d.push_back(x);
  return Shape(d);
}

Shape Shape::union_with(const Shape& other) const {
  std::vector<Dimension> d = dims_;
  for (const auto& x : other.dims_)
    if (!contains(x.name)) d.push_back(x);
  return Shape(d);
}

bool Shape::is_subset_of(const Shape& other) const {
  for (const auto& x : dims_)
    if (!other.contains(x)) return false;
  return true;
}

bool Shape::same_dims_as(const Shape& other) const {
  return ndims() == other.ndims() && is_subset_of(other);
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i].to_string();
  }
  return s + "]";
}

}  // namespace mtf
