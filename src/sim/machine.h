// machine.h — the physical machine of a Topology: cores, chips, directed
// links and routes between cores. Internal to the simulator.
//
// Torus: every chip has two directed links per torus dimension (+ and -).
// Cores of different chips talk through their chips' router: a route is the
// inter-chip links of dimension-order routing (each dimension the short way
// round the torus, ties going +), with no on-chip hop.
// Switched: every device (chip) has two directed fabric links: its port up
// into the node's switch and down out of it (or, for a ring fabric, its
// links to the next and the previous device). Within a node a route is the
// sender's up-port and the receiver's down-port (or the ring's links the
// short way round); between nodes, the sender's NIC up, the leaf uplinks
// when the nodes sit under different leaves of an oversubscribed network,
// and the receiver's NIC down. Latency is paid on the first link of each
// hop: the up-port (node_link_latency), the NIC up (network_latency).
// Both kinds: cores of one chip are joined by a directed on-chip link per
// ordered pair.
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
  // Whether a link number stands for a real link (not a core's link to
  // itself, nor a torus dimension of extent 1, nor a network of one node).
  bool exists(int link) const;
  // Chip coordinates (switched: node, device) and core index of a physical core.
  std::vector<int> chip_coords(int core) const;
  int core_index(int core) const { return core % topo_.cores_per_chip; }
  int core_at(const std::vector<int>& chip_coords, int core_index) const;
  // "chip 3,4 core 1" or "node 2 device 5" (core k when a device has several).
  std::string core_label(int core) const;
  // Switched machines: the node of a physical core.
  int node_of(int core) const { return core / topo_.cores_per_chip / topo_.devices_per_node; }

 private:
  bool switched() const { return topo_.network == Topology::Network::kSwitched; }
  void torus_route(int a, int b, std::vector<int>* links) const;
  void switched_route(int a, int b, std::vector<int>* links) const;
  // Switched link numbering: fabric links first (two per device), then NIC
  // links (two per NIC), then leaf uplinks (two per leaf, when oversubscribed).
  int nic_links_begin() const { return 2 * topo_.num_chips(); }
  int leaf_links_begin() const { return nic_links_begin() + 2 * topo_.nodes * topo_.nics_per_node; }
  int leaf_of(int node) const { return node / topo_.nodes_per_leaf; }
  int nic_of(int device) const {
    return device % topo_.devices_per_node * topo_.nics_per_node / topo_.devices_per_node;
  }

  Topology topo_;
  int dims_;
  bool leaves_ = false;  // oversubscribed leaf uplinks are modelled
  int inter_links_;
  int num_links_;
};

}  // namespace mtf::sim
