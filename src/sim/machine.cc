#include "sim/machine.h"

#include <cstdlib>

#include "core/check.h"

namespace mtf::sim {

Machine::Machine(const Topology& topo) : topo_(topo), dims_(static_cast<int>(topo.chips.size())) {
  topo_.validate();
  inter_links_ = topo_.num_chips() * 2 * dims_;
  const int c = topo_.cores_per_chip;
  num_links_ = inter_links_ + topo_.num_chips() * c * c;
}

std::vector<int> Machine::chip_coords(int core) const {
  int chip = core / topo_.cores_per_chip;
  std::vector<int> xs(dims_);
  for (int d = dims_ - 1; d >= 0; --d) {
    xs[d] = chip % topo_.chips[d];
    chip /= topo_.chips[d];
  }
  return xs;
}

int Machine::core_at(const std::vector<int>& xs, int core_index) const {
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
  return on_chip(link) ? topo_.core_link_bandwidth : topo_.link_bandwidth;
}
double Machine::latency(int link) const {
  return on_chip(link) ? topo_.core_link_latency : topo_.link_latency;
}

std::string Machine::link_name(int link) const {
  const int c = topo_.cores_per_chip;
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
