// Logical mesh -> physical cores (CoreMapping).
//
// Each logical mesh axis, innermost first, takes factors of the physical
// axes in the order: cores of a chip, then torus dimension 0, 1, 2 (inner
// factors before outer ones). Along its physical sub-axes an axis walks a
// ring: a whole torus dimension in natural order (wraparound closes it); a
// part of one in folded order (0 2 4 .. 5 3 1: at most two hops a step); two
// or more sub-axes in a comb (a snake through all but one column, then back
// down the spare column), which closes with one-hop steps whenever one side
// is even.
#include <algorithm>
#include <numeric>
#include <set>

#include "core/check.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"
#include "mtf/sim.h"
#include "sim/machine.h"

namespace mtf {
namespace {

struct SubAxis {
  int physical;  // 0: core in chip; 1 + d: torus dimension d
  int size;      // factor taken
  int stride;    // within the physical axis
  bool ring;     // natural order closes the ring (outermost factor, wraps round)
};

using Coords = std::vector<int>;  // one coordinate per sub-axis

// Boustrophedon path over sub-axes sizes (first varies fastest).
std::vector<Coords> snake(const std::vector<int>& sizes) {
  std::vector<Coords> out;
  if (sizes.empty()) return {Coords{}};
  const std::vector<int> rest(sizes.begin() + 1, sizes.end());
  const std::vector<Coords> outer = snake(rest);
  for (size_t j = 0; j < outer.size(); ++j) {
    for (int k = 0; k < sizes[0]; ++k) {
      const int i = j % 2 == 0 ? k : sizes[0] - 1 - k;
      Coords c{i};
      c.insert(c.end(), outer[j].begin(), outer[j].end());
      out.push_back(c);
    }
  }
  return out;
}

std::vector<Coords> ring_order(const std::vector<SubAxis>& subs) {
  std::vector<Coords> out;
  if (subs.size() == 1) {
    const int n = subs[0].size;
    if (subs[0].ring) {
      for (int i = 0; i < n; ++i) out.push_back({i});
    } else {
      for (int i = 0; i < n; i += 2) out.push_back({i});
      for (int i = n - 1 - (n % 2 == 0 ? 0 : 1); i > 0; i -= 2) out.push_back({i});
    }
    return out;
  }
  const int a = subs[0].size;
  std::vector<int> rest_sizes;
  for (size_t i = 1; i < subs.size(); ++i) rest_sizes.push_back(subs[i].size);
  const std::vector<Coords> path = snake(rest_sizes);
  const int r = static_cast<int>(path.size());
  auto make = [](int first, const Coords& rest) {
    Coords c{first};
    c.insert(c.end(), rest.begin(), rest.end());
    return c;
  };
  if (r % 2 == 0 && a > 1) {
    // Snake over first-coordinates 1..a-1 along the path, back down column 0.
    for (int j = 0; j < r; ++j)
      for (int k = 1; k < a; ++k) out.push_back(make(j % 2 == 0 ? k : a - k, path[j]));
    for (int j = r - 1; j >= 0; --j) out.push_back(make(0, path[j]));
  } else if (a % 2 == 0 && r > 1) {
    // Snake over path positions 1..r-1 for each first-coordinate, back
    // along path position 0.
    for (int i = 0; i < a; ++i)
      for (int k = 1; k < r; ++k) out.push_back(make(i, path[i % 2 == 0 ? k : r - k]));
    for (int i = a - 1; i >= 0; --i) out.push_back(make(i, path[0]));
  } else {
    std::vector<int> sizes{a};
    sizes.insert(sizes.end(), rest_sizes.begin(), rest_sizes.end());
    out = snake(sizes);
  }
  return out;
}

void fill_rings(CoreMapping& m, const MeshShape& mesh, const sim::Machine& machine) {
  m.rings.clear();
  for (int axis = 0; axis < mesh.ndims(); ++axis) {
    const Group g = Group::along_axes(mesh, 0, {axis});
    CoreMapping::AxisRing ring;
    ring.axis = mesh.dims()[axis].name;
    ring.size = g.size();
    int total = 0;
    if (g.size() > 1) {
      for (int i = 0; i < g.size(); ++i) {
        const int h = machine.hops(m.physical[g.ranks[i]], m.physical[g.ranks[(i + 1) % g.size()]]);
        ring.max_hops = std::max(ring.max_hops, h);
        total += h;
      }
      ring.mean_hops = static_cast<double>(total) / g.size();
    }
    m.rings.push_back(ring);
  }
}

void check_size(const MeshShape& mesh, const Topology& topo) {
  if (mesh.size() != topo.num_cores()) {
    throw LayoutError(detail::str_cat(
        "mesh ", mesh.to_string(), " has ", mesh.size(), " processors but topology \"", topo.name,
        "\" has ", topo.num_cores(),
        " cores; give a mesh with that many processors or a topology of that size (e.g. another "
        "preset, or --topology_set chips=...)"));
  }
}

// One candidate: logical axes taken in `logical_order`, each consuming
// physical axes in `physical_order` (inner factors first). Empty when the
// sizes do not factor that way.
std::vector<int> place(const MeshShape& mesh, const sim::Machine& machine,
                       const std::vector<int>& phys_size, const std::vector<int>& logical_order,
                       const std::vector<int>& physical_order, bool wraparound) {
  std::vector<int> used(phys_size.size(), 1);
  std::vector<std::vector<SubAxis>> subs(mesh.ndims());
  size_t cursor = 0;
  for (int axis : logical_order) {
    int64_t m = mesh.dims()[axis].size;
    while (m > 1) {
      while (cursor < physical_order.size() &&
             phys_size[physical_order[cursor]] / used[physical_order[cursor]] == 1)
        ++cursor;
      if (cursor == physical_order.size()) return {};
      const int ph = physical_order[cursor];
      const int remaining = phys_size[ph] / used[ph];
      const int f = std::gcd(static_cast<int>(m), remaining);
      if (f == 1) return {};
      // The outermost factor of a wrapped dimension is a ring of its own:
      // its positions are evenly spaced round the whole torus dimension.
      const bool outermost = f * used[ph] == phys_size[ph];
      subs[axis].push_back({ph, f, used[ph], outermost && (ph == 0 || wraparound)});
      used[ph] *= f;
      m /= f;
    }
  }
  std::vector<std::vector<Coords>> orders(mesh.ndims());
  for (int axis = 0; axis < mesh.ndims(); ++axis)
    orders[axis] = subs[axis].empty() ? std::vector<Coords>{Coords{}} : ring_order(subs[axis]);
  std::vector<int> physical(mesh.size());
  for (int64_t p = 0; p < mesh.size(); ++p) {
    const std::vector<int64_t> c = mesh.coordinates(p);
    std::vector<int> phys(phys_size.size(), 0);
    for (int axis = 0; axis < mesh.ndims(); ++axis) {
      const Coords& sc = orders[axis][c[axis]];
      for (size_t k = 0; k < subs[axis].size(); ++k)
        phys[subs[axis][k].physical] += sc[k] * subs[axis][k].stride;
    }
    const std::vector<int> chip(phys.begin() + 1, phys.end());
    physical[p] = machine.core_at(chip, phys[0]);
  }
  return physical;
}

// Logical processor p on physical core p.
CoreMapping row_major(const MeshShape& mesh, const sim::Machine& machine) {
  CoreMapping m;
  m.physical.resize(mesh.size());
  std::iota(m.physical.begin(), m.physical.end(), 0);
  fill_rings(m, mesh, machine);
  return m;
}

}  // namespace

CoreMapping CoreMapping::automatic(const MeshShape& mesh, const Topology& topo) {
  check_size(mesh, topo);
  const sim::Machine machine(topo);
  if (topo.network == Topology::Network::kSwitched) {
    // Row-major: the innermost mesh axes fill a device's cores, then a
    // node's devices, where the links are fastest.
    return row_major(mesh, machine);
  }
  std::vector<int> phys_size{topo.cores_per_chip};
  for (int c : topo.chips) phys_size.push_back(c);
  // Candidates: every order of the physical axes, logical axes innermost
  // first or outermost first. Best: the least sum over axes of the longest
  // ring step, then the least mean step; the first such candidate wins.
  std::vector<int> physical_order(phys_size.size());
  std::iota(physical_order.begin(), physical_order.end(), 0);
  std::vector<int> inner_first(mesh.ndims()), outer_first(mesh.ndims());
  std::iota(outer_first.begin(), outer_first.end(), 0);
  std::iota(inner_first.rbegin(), inner_first.rend(), 0);
  CoreMapping best;
  double best_max = 0, best_mean = 0;
  do {
    for (const auto* logical : {&inner_first, &outer_first}) {
      std::vector<int> physical =
          place(mesh, machine, phys_size, *logical, physical_order, topo.wraparound);
      if (physical.empty()) continue;
      CoreMapping m;
      m.physical = std::move(physical);
      fill_rings(m, mesh, machine);
      double sum_max = 0, sum_mean = 0;
      for (const auto& r : m.rings) {
        sum_max += r.max_hops;
        sum_mean += r.mean_hops;
      }
      if (best.physical.empty() || sum_max < best_max ||
          (sum_max == best_max && sum_mean < best_mean)) {
        best = std::move(m);
        best_max = sum_max;
        best_mean = sum_mean;
      }
    }
  } while (std::next_permutation(physical_order.begin(), physical_order.end()));
  if (best.physical.empty()) {
    // The mesh does not factor onto the machine: row-major order.
    best = row_major(mesh, machine);
  }
  return best;
}

CoreMapping CoreMapping::explicit_order(const MeshShape& mesh, const Topology& topo,
                                        std::vector<int> physical) {
  check_size(mesh, topo);
  if (static_cast<int64_t>(physical.size()) != mesh.size()) {
    throw ValueError(detail::str_cat("core mapping lists ", physical.size(),
                                     " physical cores but the mesh has ", mesh.size(),
                                     " processors; give one physical core per processor"));
  }
  std::set<int> seen;
  for (size_t i = 0; i < physical.size(); ++i) {
    if (physical[i] < 0 || physical[i] >= topo.num_cores() || !seen.insert(physical[i]).second) {
      throw ValueError(detail::str_cat("core mapping: entry ", i, " (physical core ", physical[i],
                                       ") is out of range 0..", topo.num_cores() - 1,
                                       " or repeated; the mapping must be a permutation"));
    }
  }
  CoreMapping result;
  result.physical = std::move(physical);
  fill_rings(result, mesh, sim::Machine(topo));
  return result;
}

}  // namespace mtf
