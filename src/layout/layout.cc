#include "mtf/layout.h"

#include <algorithm>
#include <functional>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

namespace {

// parse_pairs, with malformed strings reported as LayoutError.
std::vector<std::pair<std::string, std::string>> parse_layout_pairs(const std::string& spec,
                                                                    const std::string& what) {
  try {
    return parse_pairs(spec, what);
  } catch (const ShapeError& e) {
    throw LayoutError(e.what());
  }
}

Shape parse_mesh(const std::string& spec) {
  std::vector<Dimension> dims;
  for (const auto& [name, size_text] : parse_layout_pairs(spec, "mesh shape")) {
    size_t used = 0;
    long long size = 0;
    try {
      size = std::stoll(size_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != size_text.size()) {
      throw LayoutError(detail::str_cat("malformed mesh shape string \"", spec, "\": size \"",
                                        size_text, "\" of mesh dimension \"", name,
                                        "\" is not an integer (expected e.g. \"rows:2;cols:4\")"));
    }
    dims.push_back({name, size});
  }
  try {
    return Shape(dims);
  } catch (const ShapeError& e) {
    throw LayoutError(std::string("mesh shape \"") + spec + "\": " + e.what());
  }
}

}  // namespace

// ---- MeshShape ----------------------------------------------------------------

MeshShape::MeshShape(Shape dims) : dims_(std::move(dims)) {
  int64_t processors = 1;
  for (const Dimension& d : dims_) {
    if (d.size < 1) {
      throw LayoutError(detail::str_cat("mesh dimension \"", d.name, "\" of mesh ", to_string(),
                                        " has size ", d.size,
                                        "; a mesh dimension needs at least "
                                        "one processor"));
    }
    if (d.size > kMaxProcessors / processors) {
      throw LayoutError(detail::str_cat("mesh ", to_string(), " has more than ", kMaxProcessors,
                                        " processors, the most mtf runs or simulates; give a ",
                                        "smaller mesh"));
    }
    processors *= d.size;
  }
}
MeshShape::MeshShape(const char* spec) : MeshShape(std::string(spec)) {}
MeshShape::MeshShape(const std::string& spec) : MeshShape(parse_mesh(spec)) {}

std::vector<int64_t> MeshShape::coordinates(int64_t pnum) const {
  MTF_CHECK(pnum >= 0 && pnum < size());
  std::vector<int64_t> c(ndims());
  for (int i = ndims() - 1; i >= 0; --i) {
    c[i] = pnum % dims_[i].size;
    pnum /= dims_[i].size;
  }
  return c;
}

int64_t MeshShape::pnum(const std::vector<int64_t>& coordinates) const {
  MTF_CHECK(static_cast<int>(coordinates.size()) == ndims());
  int64_t p = 0;
  for (int i = 0; i < ndims(); ++i) {
    MTF_CHECK(coordinates[i] >= 0 && coordinates[i] < dims_[i].size);
    p = p * dims_[i].size + coordinates[i];
  }
  return p;
}

std::string MeshShape::to_string() const {
  std::string s;
  for (const Dimension& d : dims_) s += (s.empty() ? "" : ";") + d.to_string();
  return s;
}

// ---- LayoutRules --------------------------------------------------------------

LayoutRules::LayoutRules(std::vector<std::pair<std::string, std::string>> pairs)
    : pairs_(std::move(pairs)) {
  for (size_t i = 0; i < pairs_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (pairs_[i] == pairs_[j]) {
        throw LayoutError(detail::str_cat("layout rules \"", to_string(), "\" repeat the rule \"",
                                          pairs_[i].first, ":", pairs_[i].second, "\""));
      }
    }
  }
}
LayoutRules::LayoutRules(const char* spec) : LayoutRules(std::string(spec)) {}
LayoutRules::LayoutRules(const std::string& spec)
    : LayoutRules(parse_layout_pairs(spec, "layout")) {}

void LayoutRules::validate(const MeshShape& mesh) const {
  for (const auto& [tensor_dim, mesh_dim] : pairs_) {
    if (mesh.axis_of(mesh_dim) < 0) {
      throw LayoutError(
          detail::str_cat("layout rule \"", tensor_dim, ":", mesh_dim, "\" names mesh dimension \"",
                          mesh_dim, "\", which mesh \"", mesh.to_string(),
                          "\" does not have (its dimensions: ", mesh.dims().to_string(), ")"));
    }
  }
}

std::optional<int> LayoutRules::mesh_axis_for(const std::string& name,
                                              const MeshShape& mesh) const {
  std::optional<int> axis;
  for (const auto& [tensor_dim, mesh_dim] : pairs_) {
    if (tensor_dim != name) continue;
    const int a = mesh.axis_of(mesh_dim);
    if (a < 0) continue;
    if (axis && *axis != a) {
      throw LayoutError(detail::str_cat(
          "layout \"", to_string(), "\" puts tensor dimension \"", name,
          "\" on two mesh dimensions, \"", mesh.dims()[*axis].name, "\" and \"", mesh_dim,
          "\"; a tensor dimension can be split over one mesh dimension only"));
    }
    axis = a;
  }
  return axis;
}

std::vector<std::string> LayoutRules::tensor_dims_on(const std::string& mesh_dim) const {
  std::vector<std::string> r;
  for (const auto& [t, m] : pairs_)
    if (m == mesh_dim) r.push_back(t);
  return r;
}

std::string LayoutRules::to_string() const {
  std::string s;
  for (const auto& [t, m] : pairs_) s += (s.empty() ? "" : ";") + t + ":" + m;
  return s;
}

// ---- TensorLayout -------------------------------------------------------------

TensorLayout TensorLayout::make(const Shape& shape, const LayoutRules& rules, const MeshShape& mesh,
                                const std::string& tensor_name) {
  rules.validate(mesh);
  std::vector<int> t2m(shape.ndims(), -1);
  for (int i = 0; i < shape.ndims(); ++i) {
    const Dimension& d = shape[i];
    std::optional<int> axis = rules.mesh_axis_for(d.name, mesh);
    if (!axis) continue;
    const Dimension& md = mesh.dims()[*axis];
    for (int j = 0; j < i; ++j) {
      if (t2m[j] == *axis) {
        throw LayoutError(detail::str_cat(
            "tensor \"", tensor_name, "\" ", shape.to_string(), ": dimensions \"", shape[j].name,
            "\" and \"", d.name, "\" are both on mesh dimension \"", md.name, "\" under layout \"",
            rules.to_string(), "\"; two dimensions of one tensor cannot share a mesh dimension"));
      }
    }
    if (d.size % md.size != 0) {
      throw LayoutError(detail::str_cat("tensor \"", tensor_name, "\" ", shape.to_string(),
                                        ": dimension \"", d.name, "\" of size ", d.size,
                                        " is not divisible by mesh dimension \"", md.name,
                                        "\" of size ", md.size, " (layout \"", rules.to_string(),
                                        "\"); change the size, the mesh or the layout"));
    }
    t2m[i] = *axis;
  }
  return TensorLayout(shape, mesh, t2m);
}

TensorLayout TensorLayout::replicated(const Shape& shape, const MeshShape& mesh) {
  return TensorLayout(shape, mesh, std::vector<int>(shape.ndims(), -1));
}

TensorLayout TensorLayout::with_mesh_axes(const Shape& shape, const MeshShape& mesh,
                                          std::vector<int> t2m) {
  MTF_CHECK(static_cast<int>(t2m.size()) == shape.ndims());
  for (int i = 0; i < shape.ndims(); ++i) {
    if (t2m[i] < 0) continue;
    MTF_CHECK(t2m[i] < mesh.ndims());
    for (int j = 0; j < i; ++j) MTF_CHECK(t2m[j] != t2m[i]);
    MTF_CHECK(shape[i].size % mesh.dims()[t2m[i]].size == 0);
  }
  return TensorLayout(shape, mesh, std::move(t2m));
}

std::vector<int> TensorLayout::mesh_to_tensor() const {
  std::vector<int> r(mesh_.ndims(), -1);
  for (size_t i = 0; i < tensor_to_mesh_.size(); ++i)
    if (tensor_to_mesh_[i] >= 0) r[tensor_to_mesh_[i]] = static_cast<int>(i);
  return r;
}

bool TensorLayout::is_fully_replicated() const {
  for (int a : tensor_to_mesh_)
    if (a >= 0) return false;
  return true;
}

Shape TensorLayout::slice_shape() const {
  std::vector<Dimension> dims = shape_.dims();
  for (size_t i = 0; i < dims.size(); ++i)
    if (tensor_to_mesh_[i] >= 0) dims[i].size /= mesh_.dims()[tensor_to_mesh_[i]].size;
  return Shape(dims);
}

std::vector<int64_t> TensorLayout::slice_begin(int64_t pnum) const {
  const std::vector<int64_t> coords = mesh_.coordinates(pnum);
  const Shape slice = slice_shape();
  std::vector<int64_t> begin(shape_.ndims(), 0);
  for (int i = 0; i < shape_.ndims(); ++i)
    if (tensor_to_mesh_[i] >= 0) begin[i] = coords[tensor_to_mesh_[i]] * slice[i].size;
  return begin;
}

std::string TensorLayout::to_string() const {
  std::string s = "[";
  for (int i = 0; i < shape_.ndims(); ++i) {
    s += (i ? ", " : "") + shape_[i].to_string();
    if (tensor_to_mesh_[i] >= 0) s += "@" + mesh_.dims()[tensor_to_mesh_[i]].name;
  }
  return s + "]";
}

size_t TensorLayout::hash() const {
  size_t h = std::hash<std::string>()(to_string());
  return h ^ (std::hash<std::string>()(mesh_.to_string()) * 31);
}

}  // namespace mtf

namespace mtf {

std::vector<HaloPiece> HaloWindows::pieces(int from, int to) const {
  std::vector<HaloPiece> out;
  // The sender's block seen one period before, at and after itself (with
  // wrap-around), against the window in unwrapped row numbers.
  for (const int64_t period :
       wrap ? std::vector<int64_t>{-whole, 0, whole} : std::vector<int64_t>{0}) {
    int64_t lo = std::max(begin[to], from * block + period);
    int64_t hi = std::min(begin[to] + extent, (from + 1) * block + period);
    if (!wrap) {
      lo = std::max(lo, int64_t{0});
      hi = std::min(hi, whole);
    }
    if (hi > lo) out.push_back({lo - period, hi - period, lo - begin[to]});
  }
  return out;
}

bool HaloWindows::is_trivial() const {
  for (int p = 0; p < parts(); ++p)
    if (begin[p] != p * block || extent != block) return false;
  return true;
}

int64_t HaloWindows::rows_sent(int p) const {
  int64_t rows = 0;
  for (int q = 0; q < parts(); ++q) {
    if (q == p) continue;
    for (const HaloPiece& piece : pieces(p, q)) rows += piece.last - piece.first;
  }
  return rows;
}

}  // namespace mtf
