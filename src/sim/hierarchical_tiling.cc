// HierarchicalTiling (mtf/sim.h): a logical mesh as nested tiles of a
// physical shape.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/sim.h"

namespace mtf {
namespace {

int64_t product(const std::vector<int>& v) {
  int64_t p = 1;
  for (int x : v) p *= x;
  return p;
}

std::string shape_text(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Coordinates of step k of a snake (boustrophedon) path through `sizes`,
// the last axis fastest: a digit runs backwards when the digits before it
// form an odd row-major index, so consecutive steps differ by one in one
// axis.
std::vector<int> snake_coords(const std::vector<int>& sizes, int64_t k) {
  std::vector<int> raw(sizes.size());
  for (size_t a = sizes.size(); a-- > 0;) {
    raw[a] = static_cast<int>(k % sizes[a]);
    k /= sizes[a];
  }
  std::vector<int> out(sizes.size());
  int64_t prefix = 0;
  for (size_t a = 0; a < sizes.size(); ++a) {
    out[a] = prefix % 2 == 1 ? sizes[a] - 1 - raw[a] : raw[a];
    prefix = prefix * sizes[a] + raw[a];
  }
  return out;
}

}  // namespace

MeshShape HierarchicalTiling::spec_to_mesh_shape(const std::vector<Axis>& spec,
                                                 int64_t num_processors) {
  int64_t tiled = 1;
  int rest = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i].tile.empty()) {
      if (rest >= 0) {
        throw ValueError("hierarchical tiling: axes \"" + spec[rest].name + "\" and \"" +
                         spec[i].name + "\" both have no tile; give every axis but one a tile");
      }
      rest = static_cast<int>(i);
    } else {
      tiled *= product(spec[i].tile);
    }
  }
  if (tiled <= 0 || num_processors % tiled != 0 || (rest < 0 && tiled != num_processors)) {
    throw ValueError(detail::str_cat("hierarchical tiling: the tiles hold ", tiled,
                                     " processors, which ",
                                     rest < 0 ? "is not " : "does not divide ", num_processors,
                                     "; change the tiles or the physical shape"));
  }
  std::vector<Dimension> dims;
  for (size_t i = 0; i < spec.size(); ++i) {
    const int64_t size =
        static_cast<int>(i) == rest ? num_processors / tiled : product(spec[i].tile);
    dims.push_back({spec[i].name, size});
  }
  return MeshShape(Shape(dims));
}

HierarchicalTiling::HierarchicalTiling(std::vector<Axis> spec_in, std::vector<int> physical)
    : spec(std::move(spec_in)), physical_shape(std::move(physical)) {
  const size_t rank = physical_shape.size();
  if (rank == 0 || product(physical_shape) <= 0) {
    throw ValueError("hierarchical tiling: the physical shape " + shape_text(physical_shape) +
                     " must have at least one axis, each of a positive size");
  }
  std::set<std::string> names;
  for (const Axis& a : spec) {
    if (!names.insert(a.name).second) {
      throw ValueError("hierarchical tiling: axis \"" + a.name + "\" is named twice");
    }
    if (!a.tile.empty() && (a.tile.size() != rank || product(a.tile) <= 0)) {
      throw ValueError("hierarchical tiling: axis \"" + a.name + "\"'s tile " + shape_text(a.tile) +
                       " must have one positive size per physical axis (" +
                       shape_text(physical_shape) + ")");
    }
  }
  mesh_shape = spec_to_mesh_shape(spec, product(physical_shape));
  // The axis without a tile gets what the others leave, axis by axis.
  for (Axis& a : spec) {
    if (!a.tile.empty()) continue;
    a.tile = physical_shape;
    for (const Axis& other : spec) {
      if (&other == &a || other.tile.empty()) continue;
      for (size_t d = 0; d < rank; ++d) a.tile[d] /= other.tile[d];
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t covered = 1;
    for (const Axis& a : spec) covered *= a.tile[d];
    if (covered != physical_shape[d]) {
      throw ValueError(detail::str_cat(
          "hierarchical tiling: the tiles cover ", covered, " along physical axis ", d, " of ",
          shape_text(physical_shape), "; their sizes along each axis must multiply to it"));
    }
  }
  // Strides: an axis's tile coordinate counts in blocks of the tiles after it.
  std::vector<std::vector<int64_t>> stride(spec.size(), std::vector<int64_t>(rank, 1));
  for (size_t i = spec.size(); i-- > 1;) {
    for (size_t d = 0; d < rank; ++d) stride[i - 1][d] = stride[i][d] * spec[i].tile[d];
  }
  const int64_t n = mesh_shape.size();
  logical_to_physical.resize(static_cast<size_t>(n));
  for (int64_t pnum = 0; pnum < n; ++pnum) {
    std::vector<int64_t> coord(rank, 0);
    int64_t rem = pnum;
    for (size_t i = spec.size(); i-- > 0;) {  // the last logical axis varies fastest
      const int64_t size = product(spec[i].tile);
      const std::vector<int> o = snake_coords(spec[i].tile, rem % size);
      rem /= size;
      for (size_t d = 0; d < rank; ++d) coord[d] += o[d] * stride[i][d];
    }
    int64_t index = 0;
    for (size_t d = 0; d < rank; ++d) index = index * physical_shape[d] + coord[d];
    logical_to_physical[static_cast<size_t>(pnum)] = static_cast<int>(index);
  }
}

}  // namespace mtf
