// mtf/session.h — runs a graph on one processor and holds variable values.
//
// A Session lowers the part of the graph that a run needs into a per-processor
// program (src/exec/program.h): a list of slice-wise steps. Mesh
// implementations (later) produce the same kind of program with collective
// steps added. Programs are cached per (fetches, targets) set.
//
// Variables are initialised when the Session is created. Each run sees the
// variable values as they were at its start; its assignments take effect when
// it ends. Each run advances a run counter that keys the random ops, so
// dropout draws a fresh mask per step, reproducibly. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mtf/graph.h"
#include "mtf/host_tensor.h"

namespace mtf {

namespace detail {
class SessionImpl;
}

using Feeds = std::vector<std::pair<Tensor, HostTensor>>;

class Session {
 public:
  explicit Session(Graph& graph);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Computes `fetches` and runs `targets` (assignment ops). Every placeholder
  // the run needs must be fed, with its exact shape and dtype (ValueError
  // naming the placeholder otherwise). Returns one HostTensor per fetch.
  std::vector<HostTensor> run(const std::vector<Tensor>& fetches, const Feeds& feeds = {},
                              const std::vector<Operation*>& targets = {});
  HostTensor run(const Tensor& fetch, const Feeds& feeds = {});

  // Variable values by op name; set throws ValueError on an unknown name or a
  // value of another shape or dtype.
  HostTensor variable_value(const std::string& name) const;
  void set_variable_value(const std::string& name, const HostTensor& value);
  // Runs so far; keys the random ops. Settable for resuming from checkpoints.
  uint64_t run_counter() const;
  void set_run_counter(uint64_t n);

  // The per-processor program for these fetches/targets, as text: one step
  // per line with slice shapes and flops.
  std::string program_text(const std::vector<Tensor>& fetches,
                           const std::vector<Operation*>& targets = {});

 private:
  std::unique_ptr<detail::SessionImpl> impl_;
};

}  // namespace mtf
