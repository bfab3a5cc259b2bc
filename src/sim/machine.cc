#include "sim/machine.h"

#include <cstdlib>

#include "core/check.h"

namespace mtf::sim {

Machine::Machine(const Topology& topo) : topo_(topo), dims_(static_cast<int>(topo.chips.size())) {
  topo_.validate();
  if (switched()) {
    dims_ = 2;
    leaves_ = topo_.nodes_per_leaf > 0 && topo_.oversubscription > 1 &&
              topo_.nodes > topo_.nodes_per_leaf;
    const int leaves =
        leaves_ ? (topo_.nodes + topo_.nodes_per_leaf - 1) / topo_.nodes_per_leaf : 0;
    inter_links_ = leaf_links_begin() + 2 * leaves;
  } else {
    inter_links_ = topo_.num_chips() * 2 * dims_;
  }
  const int c = topo_.cores_per_chip;
  num_links_ = inter_links_ + topo_.num_chips() * c * c;
}

std::vector<int> Machine::chip_coords(int core) const {
  int chip = core / topo_.cores_per_chip;
  if (switched()) return {chip / topo_.devices_per_node, chip % topo_.devices_per_node};
  std::vector<int> xs(dims_);
  for (int d = dims_ - 1; d >= 0; --d) {
    xs[d] = chip % topo_.chips[d];
    chip /= topo_.chips[d];
  }
  return xs;
}

int Machine::core_at(const std::vector<int>& xs, int core_index) const {
  if (switched())
    return (xs[0] * topo_.devices_per_node + xs[1]) * topo_.cores_per_chip + core_index;
  int chip = 0;
  for (int d = 0; d < dims_; ++d) chip = chip * topo_.chips[d] + xs[d];
  return chip * topo_.cores_per_chip + core_index;
}

void Machine::route(int a, int b, std::vector<int>* links) const {
  if (a == b) return;
  const int c = topo_.cores_per_chip;
  const int chip_a = a / c, chip_b = b / c;
  if (chip_a == chip_b) {
    links->push_back(inter_links_ + chip_a * c * c + (a % c) * c + (b % c));
    return;
  }
  if (switched()) {
    switched_route(chip_a, chip_b, links);
  } else {
    torus_route(a, b, links);
  }
}

void Machine::switched_route(int da, int db, std::vector<int>* links) const {
  const int per_node = topo_.devices_per_node;
  const int na = da / per_node, nb = db / per_node;
  if (na != nb) {
    const int nics = topo_.nics_per_node;
    links->push_back(nic_links_begin() + 2 * (na * nics + nic_of(da)));
    if (leaves_ && leaf_of(na) != leaf_of(nb)) {
      links->push_back(leaf_links_begin() + 2 * leaf_of(na));
      links->push_back(leaf_links_begin() + 2 * leaf_of(nb) + 1);
    }
    links->push_back(nic_links_begin() + 2 * (nb * nics + nic_of(db)) + 1);
    return;
  }
  if (topo_.node_fabric == Topology::NodeFabric::kSwitch) {
    links->push_back(2 * da);
    links->push_back(2 * db + 1);
    return;
  }
  // A ring of the node's devices: the short way round, ties going +.
  const int ia = da % per_node, ib = db % per_node;
  const int forward = ((ib - ia) % per_node + per_node) % per_node;
  const bool plus = forward <= per_node - forward;
  const int count = plus ? forward : per_node - forward;
  int i = ia;
  for (int k = 0; k < count; ++k) {
    links->push_back(2 * (na * per_node + i) + (plus ? 0 : 1));
    i = ((i + (plus ? 1 : -1)) % per_node + per_node) % per_node;
  }
}

void Machine::torus_route(int a, int b, std::vector<int>* links) const {
  const int c = topo_.cores_per_chip;
  std::vector<int> x = chip_coords(a);
  const std::vector<int> y = chip_coords(b);
  for (int d = 0; d < dims_; ++d) {
    const int n = topo_.chips[d];
    int forward = ((y[d] - x[d]) % n + n) % n;
    int step;
    int count;
    if (!topo_.wraparound) {
      step = y[d] > x[d] ? 1 : -1;
      count = std::abs(y[d] - x[d]);
    } else if (forward <= n - forward) {
      step = 1;
      count = forward;
    } else {
      step = -1;
      count = n - forward;
    }
    for (int i = 0; i < count; ++i) {
      const int chip = core_at(x, 0) / c;
      links->push_back(chip * 2 * dims_ + d * 2 + (step > 0 ? 0 : 1));
      x[d] = ((x[d] + step) % n + n) % n;
    }
  }
}

int Machine::hops(int a, int b) const {
  std::vector<int> links;
  route(a, b, &links);
  return static_cast<int>(links.size());
}

double Machine::bandwidth(int link) const {
  if (on_chip(link)) return topo_.core_link_bandwidth;
  if (!switched()) return topo_.link_bandwidth;
  if (link < nic_links_begin()) return topo_.fabric_bandwidth();
  if (link < leaf_links_begin()) return topo_.nic_bandwidth;
  return topo_.nodes_per_leaf * topo_.nics_per_node * topo_.nic_bandwidth / topo_.oversubscription;
}

double Machine::latency(int link) const {
  if (on_chip(link)) return topo_.core_link_latency;
  if (!switched()) return topo_.link_latency;
  const bool up = link % 2 == 0;  // every switched link pair starts even
  if (link < nic_links_begin())
    return up || topo_.node_fabric == Topology::NodeFabric::kRing ? topo_.fabric_latency() : 0;
  if (link < leaf_links_begin()) return up ? topo_.network_latency : 0;
  return 0;
}

bool Machine::exists(int link) const {
  const int c = topo_.cores_per_chip;
  if (on_chip(link)) {
    const int i = link - inter_links_;
    return (i / c) % c != i % c;
  }
  if (!switched()) return topo_.chips[(link / 2) % dims_] > 1;
  if (link < nic_links_begin()) return topo_.devices_per_node > 1;
  return topo_.nodes > 1;
}

std::string Machine::core_label(int core) const {
  const std::vector<int> xs = chip_coords(core);
  if (switched()) {
    std::string s = detail::str_cat("node ", xs[0], " device ", xs[1]);
    if (topo_.cores_per_chip > 1) s += detail::str_cat(" core ", core_index(core));
    return s;
  }
  std::string s = "chip ";
  for (size_t d = 0; d < xs.size(); ++d) s += (d ? "," : "") + std::to_string(xs[d]);
  return s + " core " + std::to_string(core_index(core));
}

std::string Machine::link_name(int link) const {
  const int c = topo_.cores_per_chip;
  if (switched()) {
    const int per_node = topo_.devices_per_node;
    if (on_chip(link)) {
      const int i = link - inter_links_;
      const int chip = i / (c * c);
      return detail::str_cat("node ", chip / per_node, " device ", chip % per_node, " core",
                             (i / c) % c, "->core", i % c);
    }
    const bool up = link % 2 == 0;
    const bool ring = topo_.node_fabric == Topology::NodeFabric::kRing;
    if (link < nic_links_begin()) {
      const int chip = link / 2;
      const std::string dev =
          detail::str_cat("node ", chip / per_node, " device ", chip % per_node);
      if (ring) return dev + (up ? " +ring" : " -ring");
      return up ? dev + " ->switch" : "switch-> " + dev;
    }
    if (link < leaf_links_begin()) {
      const int nic = (link - nic_links_begin()) / 2;
      const std::string name =
          detail::str_cat("node ", nic / topo_.nics_per_node, " nic ", nic % topo_.nics_per_node);
      return up ? name + " ->network" : "network-> " + name;
    }
    const int leaf = (link - leaf_links_begin()) / 2;
    return up ? detail::str_cat("leaf ", leaf, " ->spine") : detail::str_cat("spine-> leaf ", leaf);
  }
  if (on_chip(link)) {
    const int i = link - inter_links_;
    const int chip = i / (c * c);
    const std::vector<int> xs = chip_coords(chip * c);
    std::string s = "chip(";
    for (int d = 0; d < dims_; ++d) s += (d ? "," : "") + std::to_string(xs[d]);
    return s + ") core" + std::to_string((i / c) % c) + "->core" + std::to_string(i % c);
  }
  const int chip = link / (2 * dims_), d = (link / 2) % dims_;
  const std::vector<int> xs = chip_coords(chip * c);
  std::string s = "chip(";
  for (int k = 0; k < dims_; ++k) s += (k ? "," : "") + std::to_string(xs[k]);
  static const char* names = "xyz";
  return s + ") " + (link % 2 ? "-" : "+") + names[d];
}

}  // namespace mtf::sim
