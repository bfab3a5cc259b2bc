// mtf/session.h — runs a graph on a mesh of processors (by default, one)
// and holds variable values.
//
// A Session lowers the part of the graph that a run needs into one SPMD
// program (src/lowering/program.h) for its mesh and layout rules: slice-wise
// steps plus the collectives the layouts force. Programs are cached per
// (fetches, targets) set. Mesh implementations:
// - kSimd: every processor runs the program on its own slices, as a fiber
//   (on a pool of one thread per CPU, by default) with an in-process
//   transport;
// - kPlacement: one controller runs each step for every device's slices and
//   does the collectives in memory;
// - kSimulated: the SIMD program on the torus simulator (mtf/sim.h). Its
//   mesh must have the topology's core count. Each run first checks the
//   program's peak memory per core against the machine (OutOfMemoryError
//   naming the largest tensors). In cost-only mode the Session holds no
//   values: variables are not created, placeholders need no feeds, and
//   fetches come back as empty HostTensors; only the report is produced.
// Layouts never change results: any mesh, layout and implementation gives
// the numbers of the one-processor run (to float rounding of reductions;
// random numbers bit for bit). Fetches are whole host tensors; feeds are
// whole host tensors or, in a multi-process job, just the block this
// process needs (local_feed_block: sharded input, so that each rank reads
// only its share of a batch); variables live sliced on their processors.
//
// Variables are initialised when the Session is created. Each run sees the
// variable values as they were at its start; its assignments take effect when
// it ends. Each run advances a run counter that keys the random ops, so
// dropout draws a fresh mask per step, reproducibly. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mtf/graph.h"
#include "mtf/host_tensor.h"
#include "mtf/in_process_transport.h"
#include "mtf/layout.h"
#include "mtf/profile.h"

namespace mtf {

namespace detail {
class SessionImpl;
}

using Feeds = std::vector<std::pair<Tensor, HostTensor>>;

struct SimOptions;  // mtf/sim.h
struct SimReport;   // mtf/sim.h

// A SimOptions held by value without its definition, so that this header
// does not bring in the simulator's: copies copy the options. Read and set
// them through `->` with mtf/sim.h included (`config.sim->topology = ...`).
class SimOptionsBox {
 public:
  SimOptionsBox();                           // SimOptions{}
  SimOptionsBox(const SimOptions& options);  // NOLINT: implicit, as a SimOptions value
  SimOptionsBox(const SimOptionsBox& other);
  SimOptionsBox& operator=(const SimOptionsBox& other);
  ~SimOptionsBox();
  SimOptions* operator->() { return options_.get(); }
  const SimOptions* operator->() const { return options_.get(); }
  SimOptions& operator*() { return *options_; }
  const SimOptions& operator*() const { return *options_; }

 private:
  std::unique_ptr<SimOptions> options_;  // never null
};

enum class MeshImpl { kSimd, kPlacement, kSimulated };

// "simd", "placement" or "simulated" (the C++ flags' and the Python
// module's names); parse_mesh_impl reads them back, ValueError naming the
// accepted names otherwise.
const char* mesh_impl_name(MeshImpl impl);
MeshImpl parse_mesh_impl(const std::string& name);

struct MeshConfig {
  MeshShape mesh_shape;  // default: one processor
  LayoutRules layout;    // default: nothing split
  MeshImpl impl = MeshImpl::kSimd;
  // kSimd: cores as fibers on one thread per CPU (default), all on one
  // thread, or a thread each; ranks running at once share BLAS's threads.
  RankExecution execution = RankExecution::kPool;
  std::chrono::milliseconds timeout{60000};  // of every collective's wait
  // Every layout gives exactly the bits of one processor: sums over split
  // dimensions gather the dimension instead of allreducing partial sums
  // (the reducing processors repeat that work), and float einsums use a
  // kernel that sums each element in index order with FMAs, independent of
  // slicing and threads, instead of BLAS. Slower; for checking a layout or
  // debugging a divergence. Off: layouts agree to float rounding.
  bool reproducible = false;
  // Chains of elementwise ops run as one fused kernel each, outputs taking
  // over inputs that die (fewer passes over memory; the same bits either
  // way); outside reproducible mode an optimizer's update of a weight by its
  // gradient's contraction (SGD, momentum) also adds the product straight
  // into the new weight (sgemm with beta = 1; rounding differs from the two
  // steps). Off: one kernel per op, for comparing. Simulated runs never
  // fuse, so the timing model prices the ops it knows.
  bool fuse = true;
  // Time every step of every run (not simulated ones) per op and op type;
  // read with Session::profile(). Two clock reads per step.
  bool profile = false;
  // Stop a run at the first NaN or infinity an op computes (a loss, a
  // gradient, a variable's new value): NumericsError naming the op, the
  // call that made it and the element, before any variable changes. Every
  // output is scanned once, and ops run unfused so that the one named is
  // the one that made the value (the optimizer's fused update rounds a
  // little differently). Not for simulated runs.
  bool check_numerics = false;
  SimOptionsBox sim;  // kSimulated: the machine, mode, core mapping and trace
  // Multi-process jobs (kSimd only): this process is rank
  // process_transport->rank() of a job of mesh-size processes and runs that
  // processor alone (e.g. connect_tcp(TcpOptions::from_environment())).
  // Every rank must make the same Session calls in the same order: fetches
  // and variable values of split tensors are gathered from all ranks.
  std::shared_ptr<Transport> process_transport;
};

class Session {
 public:
  // Throws LayoutError when the layout rules name mesh dimensions the mesh
  // lacks or a variable's layout is impossible; the layouts of the other
  // tensors are checked by check() or when a run first lowers them.
  explicit Session(Graph& graph, MeshConfig config = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Computes `fetches` and runs `targets` (assignment ops). Every placeholder
  // the run needs must be fed with its dtype and either its exact shape or
  // the shape of local_feed_block (that block's values; ValueError naming
  // the placeholder and both shapes otherwise). Returns one HostTensor per
  // fetch.
  std::vector<HostTensor> run(const std::vector<Tensor>& fetches, const Feeds& feeds = {},
                              const std::vector<Operation*>& targets = {});
  // A braced list of fetches, `run({loss}, feeds)`, is always this vector
  // form (C++ prefers an initializer_list parameter for a braced list), so
  // `[0]` works however many fetches are listed.
  std::vector<HostTensor> run(std::initializer_list<Tensor> fetches, const Feeds& feeds = {},
                              const std::vector<Operation*>& targets = {});
  // One fetch, `run(loss, feeds)`: its value.
  HostTensor run(const Tensor& fetch, const Feeds& feeds = {});

  // The block of `placeholder` this process needs under the mesh and layout:
  // the slices of the processors it runs (their bounding box), as a begin
  // offset and a shape with the placeholder's dimension names. The whole
  // tensor in a single-process session; a rank's share of a batch-split
  // input in a multi-process job. Feeding just this block reads 1/n of the
  // batch on each of n data-parallel ranks. ValueError for a non-placeholder.
  struct FeedBlock {
    std::vector<int64_t> begin;
    Shape shape;
    bool whole = true;  // the block is the whole tensor
  };
  FeedBlock local_feed_block(const Tensor& placeholder) const;
  // Bytes of the values fed to the last run (what this process read in).
  int64_t last_fed_bytes() const;

  // Lowers the program for these fetches and targets as run() would (and
  // keeps it for the run), computing nothing: every tensor's layout is
  // checked now. A LayoutError names the op that made the offending tensor,
  // and the user's call when that op is internal (e.g. `op "exp_3" (exp),
  // made by softmax on "logits:0"`, or `..., made by the gradient of ...`).
  void check(const std::vector<Tensor>& fetches, const std::vector<Operation*>& targets = {});

  // Variable values by op name; set throws ValueError on an unknown name or a
  // value of another shape or dtype.
  HostTensor variable_value(const std::string& name) const;
  void set_variable_value(const std::string& name, const HostTensor& value);
  // Slice-wise access for checkpoints, without assembling whole tensors:
  // every variable's name in graph order; the distinct slices a variable's
  // layout holds in this process (replicas once; `begin` is the slice's
  // offset); and setting
  // a variable slice by slice — fill(begin, slice) is called once per
  // distinct slice with a tensor of that slice's shape to fill, and replicas
  // share the result. If fill throws, the variable keeps its old value.
  struct VariableSlice {
    std::vector<int64_t> begin;
    HostTensor value;
  };
  std::vector<std::string> variable_names() const;
  // The distinct slices of a variable's layout over the whole mesh (in
  // processor order), each with the lowest processor holding it (its owner),
  // and the full and slice shapes. The same on every rank of a job.
  struct SliceLayout {
    Shape full, slice;
    std::vector<std::vector<int64_t>> begins;
    std::vector<int64_t> owners;
  };
  SliceLayout variable_slice_layout(const std::string& name) const;
  std::vector<VariableSlice> variable_slices(const std::string& name) const;
  void set_variable_slices(
      const std::string& name,
      const std::function<void(const std::vector<int64_t>& begin, HostTensor& slice)>& fill);

  // Runs so far; keys the random ops. Settable for resuming from checkpoints.
  uint64_t run_counter() const;
  void set_run_counter(uint64_t n);

  // The per-processor program for these fetches/targets, as text: one step
  // per line with layouts, slice shapes, flops, and collectives with their
  // mesh axes and bytes.
  std::string program_text(const std::vector<Tensor>& fetches,
                           const std::vector<Operation*>& targets = {});
  // Mesh TensorFlow's computation/communication counters for that program:
  // flops per processor, bytes sent per processor by collective kind and
  // mesh axis, and the same per op.
  std::string counters_text(const std::vector<Tensor>& fetches,
                            const std::vector<Operation*>& targets = {});
  // Floating-point operations of one run of that program, all processors
  // together (the numerator of FLOP utilisation).
  double flops_per_run(const std::vector<Tensor>& fetches,
                       const std::vector<Operation*>& targets = {});
  // Before running: how this mesh and layout split the program of these
  // fetches and targets. Every variable, input (placeholder) and fetch with
  // a picture of its blocks over the mesh (sharding_picture, at most
  // `max_blocks` blocks per axis), then each op's collectives with their
  // mesh axes and bytes per processor; in a simulated session that has run,
  // with each op's time in that run.
  std::string explain(const std::vector<Tensor>& fetches,
                      const std::vector<Operation*>& targets = {}, int max_blocks = 8);
  const MeshConfig& config() const;
  // kSimulated: the report of the last run (ValueError before any run or
  // for another mesh implementation). Include mtf/sim.h to read it.
  const SimReport& simulation_report() const;
  // MeshConfig::profile: where the runs' time went, per program run (its
  // fetches and targets), per op type and per op, as means per run since the
  // Session was made or reset_profile() was called. Empty without the flag.
  Profile profile() const;
  void reset_profile();

 private:
  std::unique_ptr<detail::SessionImpl> impl_;
};

}  // namespace mtf
