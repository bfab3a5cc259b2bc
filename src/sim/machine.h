// machine.h — the physical machine of a Topology: cores, chips, directed
// links and dimension-order routes between cores. Internal to the simulator.
//
// Links: every chip has two directed links per torus dimension (+ and -);
// cores of one chip are joined by a directed on-chip link per ordered pair.
// Cores of different chips talk through their chips' router: a route is the
// inter-chip links of dimension-order routing (each dimension the short way
// round the torus, ties going +), with no on-chip hop.
#pragma once

#include <string>
#include <vector>

#include "mtf/sim.h"

namespace mtf::sim {

class Machine {
 public:
  explicit Machine(const Topology& topo);

  const Topology& topology() const { return topo_; }
  int num_cores() const { return topo_.num_cores(); }
  int num_links() const { return num_links_; }
  // Appends the directed links from physical core a to b, in order.
  void route(int a, int b, std::vector<int>* links) const;
  int hops(int a, int b) const;
  bool on_chip(int link) const { return link >= inter_links_; }
  double bandwidth(int link) const;
  double latency(int link) const;
  std::string link_name(int link) const;
  // Chip coordinates and core index of a physical core.
  std::vector<int> chip_coords(int core) const;
  int core_index(int core) const { return core % topo_.cores_per_chip; }
  int core_at(const std::vector<int>& chip_coords, int core_index) const;

 private:
  Topology topo_;
  int dims_;
  int inter_links_;
  int num_links_;
};

}  // namespace mtf::sim
