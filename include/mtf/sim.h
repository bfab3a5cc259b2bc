// mtf/sim.h — the simulator: a machine (a TPU-shaped torus, or nodes of
// GPUs on a switched network), how a logical mesh is laid onto it, and what
// a simulated run reports.
//
// A simulated run executes the same per-core program as a real SIMD run, one
// Boost.Fiber fiber per simulated core, against a model of the machine:
// compute steps take roofline time (max of flops over peak and bytes over
// memory bandwidth); a message leaves at its sender's clock and arrives after
// per-hop latency plus size over bandwidth along its dimension-order route,
// waiting for every directed link it crosses to be free (contention). Fibers
// are scheduled by simulated time, so times are causal and deterministic.
// Functional mode computes real data (results equal the in-process SIMD run
// bit for bit); cost-only mode moves sizes and clocks only, holding no
// tensor memory. Select it with MeshConfig{.impl = MeshImpl::kSimulated,
// .sim = ...}; Session::simulation_report() returns the last run's report.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mtf/dtype.h"
#include "mtf/layout.h"

namespace mtf {

// A rank's compute on a host with a given number of BLAS threads, as
// `mtf-sim --calibrate` fits it (HostFigures holds it for one thread and
// for every CPU). For a matrix product, work is the sum over the BLAS calls
// its kernel makes (batched products count each) of
//   (2mnk + gemm_half_flops) / gemm_flops * (1 + gemm_narrow / max(10, min(m, n, k)))
// times gemm_in_program (divided by gemm_bfloat16_speedup for bfloat16
// operands), or, when longer, its operands' bytes streamed at
// gemm_memory_bandwidth (each rank's share of it when ranks fill the CPUs);
// an einsum step takes its calls' times or, when longer, their flop times
// plus its operands' and result's bytes times gemm_cold_seconds_per_byte;
// any other step takes elementwise_step_overhead plus
// elementwise_in_program times its roofline time on one thread.
struct HostCompute {
  double gemm_flops = 0;       // peak on matrix products (0: core_flops; for all CPUs: none)
  double gemm_half_flops = 0;  // flops of a product that reaches half of it
  double gemm_narrow = 0;      // slowdown of products with a narrow side
  // How much faster a product of bfloat16 operands runs than the same
  // product in float32 (AVX512-BF16 instructions; about 1 without them).
  double gemm_bfloat16_speedup = 1;
  // Bytes/s at which a product that does little work per byte (a
  // matrix-vector product: decoding one token) streams its operands: 4 MiB
  // matrices and larger at gemm_memory_bandwidth, 1 MiB and smaller at
  // gemm_cache_bandwidth (a model's smaller matrices stay in the last-level
  // cache from one step to the next), linear in bytes between; 0: products
  // are timed by their flops only.
  double gemm_memory_bandwidth = 0;
  double gemm_cache_bandwidth = 0;
  // What a real program's steps take over what the figures give for them
  // (operands come cold from memory, kernels pay set-up): matrix products,
  // and everything else (a factor and seconds more per step). Measured on
  // reference programs. A product's is a cost per byte of an einsum step's
  // operands and result, added to its BLAS calls' time once (calls of a
  // batch share an operand, which is cold only for the first): cold
  // operands cost bytes, not flops, so the cost fades in products that do
  // more work per byte (as a factor on the curve, fitted on the reference
  // programs' small products, it counted an LM's feed-forward products
  // 10-20% over). gemm_in_program, a factor on the curve, is what machine
  // files written before the byte cost hold; calibration now leaves it 1.
  double gemm_cold_seconds_per_byte = 0;
  double gemm_in_program = 1;
  // A convolution step over its BLAS calls and its im2col columns' traffic
  // (measured on the reference CNN: its products are many small ones, which
  // OpenBLAS's threads slow down rather than speed up).
  double conv_in_program = 1;
  // A pooling step (max_pool, avg_pool) and a pooling gradient over the
  // roofline of their bytes, in place of elementwise_in_program (measured
  // on the reference CNN: the gradient's window search and adds to
  // scattered taps ran at a third of a stream's rate, the forward window
  // search near it).
  double pool_in_program = 1;
  double pool_grad_in_program = 1;
  double elementwise_in_program = 1;
  double elementwise_step_overhead = 0;
  // The same for fused chains (a softmax's pieces, a bias and its relu),
  // which read operands broadcast along short rows and reduce along them;
  // fused_in_program 0: as elementwise_*.
  double fused_in_program = 0;
  double fused_step_overhead = 0;
};

// Which pooling factor a host times an op type with: max_pool and avg_pool
// pool_in_program, their gradients pool_grad_in_program, others none (the
// simulator's engine and calibration's reference CNN classify alike).
enum class PoolingStep { kNone, kPool, kGradient };
PoolingStep pooling_step(const std::string& op_type);

// What `mtf-sim --calibrate` measures of a host, beyond the machine's
// description (Topology). A compute step takes
//   (step_overhead + work) * max(1, ranks / host_cpus)
// (more ranks than CPUs take turns), times busy_in_program when they fill
// the CPUs (and times oversubscribed_in_program too when they outnumber
// them); work
// uses one_cpu's figures when the rank has one CPU or less, or the product
// is too small for OpenBLAS to share out (m*n*k at most gemm_threads_from),
// and otherwise interpolates by threads towards all_cpus'. Elementwise
// rooflines count exp, log, tanh and the like transcendental_cost flops per
// element and read bytes up to cache_bytes at cache_bandwidth (else at the
// chip's memory bandwidth). A run costs run_overhead more
// (threads_run_overhead for ranks as threads of one process). Ranks talk
// over the node fabric as threads, at process_link_* as processes, at
// tcp_link_* as processes over TCP only.
struct HostFigures {
  HostCompute one_cpu;                // one BLAS thread
  HostCompute all_cpus;               // host_cpus BLAS threads (gemm_flops 0: not measured)
  double gemm_threads_from = 262144;  // m*n*k above which BLAS shares out a product
  // A float32 product on one thread takes at most gemm_call_seconds +
  // 2mnk / gemm_small_flops: OpenBLAS's kernels for small matrices, which
  // the curve above (fitted on products of 0.1 MFLOP and more) counts at
  // about gemm_half_flops / gemm_flops a call (a batch of 2048 4x1 by 1x1
  // gating products: 1.1 us a call predicted, 70-80 ns measured on an AMD
  // EPYC VM). 0: the curve only.
  double gemm_call_seconds = 0;
  double gemm_small_flops = 0;
  double transcendental_cost = 1;  // flops per element of exp, log, tanh, ...
  double random_cost = 1;          // flops per element of random_uniform (counter-based draws)
  // With more ranks than CPUs, what taking turns costs beyond the turns
  // and beyond busy_in_program (switches, each rank's data pushed out of
  // cache by the others'): multiplies every compute step. Measured on the
  // reference programs as twice as many replicated ranks as CPUs against
  // as many (no messages, so no waits), against the same simulated.
  double oversubscribed_in_program = 1;
  // What filling every CPU with ranks costs their compute steps beyond the
  // shared cache and memory modelled apart: measured as the mean rank's
  // compute in data-parallel reference runs over the compute of one rank
  // alone (the slowest rank's lead at the collectives is collective_skew's).
  // Interpolated by the CPUs the ranks fill (1 for a single rank); more
  // ranks than CPUs fill them all, and pay oversubscribed_* besides.
  double busy_in_program = 1;
  // Bytes/s at which each rank streams a product's cold matrices while
  // every CPU has a rank of one thread streaming its own (the 4 MiB
  // matrix-vector products of gemm_memory_bandwidth, on every CPU at
  // once): such ranks keep this share of their one-thread rates for
  // products bound by their bytes. 0: not measured; the share is then
  // gemm_memory_bandwidth_all_cpus divided among the ranks.
  double gemm_memory_bandwidth_busy = 0;
  // With more ranks than CPUs, what a rank loses at each collective step
  // (seconds): a rank that waits gives up its CPU, and gets one back only
  // when another rank's turn ends. Measured on the reference MLP beside
  // the factor above (a cost per collective, not per flop: the LM's long
  // steps pay far less for taking turns than the MLP's short ones).
  double oversubscribed_wait = 0;
  // The same for ranks as processes (host_ranks processes or tcp), which
  // wait in their transport's own way (spin, then sleep on a doorbell);
  // measured on the reference MLP as processes. 0: as oversubscribed_wait.
  double processes_oversubscribed_wait = 0;
  // Ranks as threads that fill at most the CPUs spin collective_wake_after
  // seconds for a message (the in-process transport's poll), then block. A
  // rank that arrives at a collective after its peers blocked pays
  // collective_wake (seconds) to wake them: measured on two ranks, one
  // held back 1 ms before each small allreduce against 10 us (on a 2-vCPU
  // AMD EPYC VM 8-48 us where a spinning peer answers in 2). The ranks
  // arrive apart by cpu_spread (how much longer the slowest CPU takes than
  // the fastest over the same compute, all of them busy: the busy runs'
  // processors timed apart) times the compute since the last collective;
  // a collective step pays the wake when that exceeds collective_wake_after.
  // 0 (unmeasured): no wake.
  double collective_wake = 0;
  double collective_wake_after = 30e-6;
  double cpu_spread = 0;
  // Ranks as threads that fill at most the CPUs (more than one) reach each
  // collective apart even on the same steps (their CPUs' pace moves from
  // moment to moment, and the drift grows as a random walk's), and the step
  // waits for the last: collective_skew * sqrt(seconds of compute since the
  // last collective) seconds, beyond the wake above. Measured on the
  // reference programs data-parallel over every CPU (see busy_in_program):
  // their processors' time in collectives beyond their simulation, over
  // what a unit of it adds there. A profile of the rows of two threads on
  // a 2-vCPU AMD EPYC VM put their miss in their collectives: 3.5% of the
  // compute before collectives 5 ms apart (the LM's), 7.5% 0.8 ms apart
  // (the reference LM's), as a square root gives. 0: none.
  double collective_skew = 0;
  double cache_bytes = 0;      // a step's bytes up to this run at cache_bandwidth
  double cache_bandwidth = 0;  // bytes/s of one thread within its cache
  // Ranks that compute at once share the cache and the memory: each keeps
  // cache_bytes / ranks (a rank's steps up to that run at cache_bandwidth),
  // and streams beyond it at memory_bandwidth_busy (bytes/s each while
  // every CPU streams its own; measured on replicated ranks, each step's
  // time per processor; 0: unmeasured, chip_memory_bandwidth), both
  // interpolated by the CPUs the ranks fill. On a 2-vCPU AMD EPYC VM one
  // thread streamed 70 GB/s up to 12 MiB a step and 37-41 beyond; two at
  // once 65 up to 3 MiB, 51 at 4-8, 19 each at 32.
  double memory_bandwidth_busy = 0;
  double step_overhead = 0;             // seconds per compute step (executor, dispatch)
  double run_overhead = 0;              // seconds per run (feeds, fetches, start)
  double threads_run_overhead = 0;      // the same for a mesh of ranks as threads
  double process_link_bandwidth = 1e9;  // bytes/s between ranks in separate processes
  double process_link_latency = 20e-6;  // seconds for a message between them
  double tcp_link_bandwidth = 1e9;      // the same over TCP only (host_ranks = tcp)
  double tcp_link_latency = 30e-6;
  // The links with more ranks than CPUs (ranks wait to be scheduled; 0: as
  // above). Calibration fits the processes' latency on the reference MLP
  // (with processes_oversubscribed_wait): a message to a rank waiting for
  // its turn costs more than a ping-pong of ranks that only spin shows.
  double threads_oversubscribed_bandwidth = 0, threads_oversubscribed_latency = 0;
  double processes_oversubscribed_bandwidth = 0, processes_oversubscribed_latency = 0;
};

// A machine, one of two kinds:
//  - kTorus: chips in a 1-, 2- or 3-D torus (or mesh without wraparound),
//    the TPU pods; a few cores per chip joined by an on-chip link.
//  - kSwitched: `nodes` nodes of `devices_per_node` devices (a device is a
//    chip: a GPU), the devices of a node joined by a fabric (a non-blocking
//    switch like NVSwitch, each device with a port of node_link_bandwidth
//    per direction; or a ring of links), each node with `nics_per_node` NICs
//    into a switched network (a device uses NIC device * nics / devices);
//    with nodes_per_leaf > 0 and oversubscription > 1, traffic between leaf
//    switches shares each leaf's uplink of nodes_per_leaf * nics *
//    nic_bandwidth / oversubscription.
// Cores are numbered chip-major: physical core = chip index (row-major over
// `chips`, or node * devices_per_node + device) * cores_per_chip + core.
// Bandwidths are what data moves at (payload), not line rates.
struct Topology {
  enum class Network { kTorus, kSwitched };
  enum class NodeFabric { kSwitch, kRing };

  std::string name = "custom";
  Network network = Network::kTorus;
  std::vector<int> chips{1, 1};  // kTorus: extent of each physical dimension
  bool wraparound = true;
  int cores_per_chip = 1;
  double core_flops = 1e12;  // peak flop/s of one core, for dtypes without their own
  // Peak flop/s for one dtype (0: core_flops), indexed by DType (float32,
  // int32, bfloat16; bool ops count as int32).
  std::array<double, 3> dtype_flops{0, 0, 0};
  double core_memory = 8.0 * (1 << 30);  // bytes of memory per core
  double chip_memory_bandwidth = 100e9;  // bytes/s per chip, shared by its cores
  double link_bandwidth = 10e9;          // kTorus: bytes/s per direction of an inter-chip link
  double link_latency = 1e-6;            // kTorus: seconds per inter-chip hop
  double core_link_bandwidth = 10e9;     // bytes/s per direction between cores of a chip
  double core_link_latency = 0.5e-6;     // seconds for that hop
  // kSwitched:
  int nodes = 1;
  int devices_per_node = 1;
  NodeFabric node_fabric = NodeFabric::kSwitch;
  double node_link_bandwidth =
      100e9;                        // bytes/s per direction of a device's fabric port / ring link
  double node_link_latency = 1e-6;  // seconds device to device (switch) or per ring hop
  int nics_per_node = 1;
  double nic_bandwidth = 25e9;    // bytes/s per direction of one NIC
  double network_latency = 5e-6;  // seconds NIC to NIC across the network
  int nodes_per_leaf = 0;         // nodes under one leaf switch (0: one non-blocking switch)
  double oversubscription = 1;    // leaf downlinks over uplinks (1: non-blocking)
  // A host (a CPU machine, as `mtf-sim --calibrate` measures one): with
  // host_cpus > 0 the devices of each node are mtf's ranks sharing that many
  // CPUs (a simulated Session gives a one-node host one device per rank of
  // its mesh), and the simulator runs the program mtf's executor runs (fused
  // elementwise chains and updates), timed by `host` (HostFigures). Ranks
  // run as threads of one process, as processes (shared memory between
  // them, mtf's default), or as processes over TCP only (MTF_SHM=0).
  enum class HostRanks { kThreads, kProcesses, kTcp };
  int host_cpus = 0;
  HostRanks host_ranks = HostRanks::kThreads;
  HostFigures host;
  std::string sources;  // where the figures come from

  int num_chips() const;
  int num_cores() const;
  double core_memory_bandwidth() const { return chip_memory_bandwidth / cores_per_chip; }
  // Peak flop/s of one core on `dtype`.
  double flops(DType dtype) const;
  // Whether every pair of devices is equally near (a switched machine whose
  // nodes have a switch fabric): the collectives then pick the algorithms
  // of flat networks.
  bool flat() const;
  // A host's figures (host_cpus > 0), per device: seconds of one BLAS
  // product [m,k] x [k,n]; of elementwise work (`flops` weighted as above)
  // moving `bytes`; and of a compute step whose work takes `work` seconds.
  // (`one_thread`: a product its kernel keeps on one BLAS thread;
  // `in_program_factor` false: without gemm_in_program, for a step whose
  // own factor was measured against the bare curve, a convolution's;
  // `by_flops`: set to the product's time by its flops alone, before its
  // bytes bound it.)
  double host_gemm_seconds(double m, double n, double k, DType dtype = DType::kFloat32,
                           bool one_thread = false, bool in_program_factor = true,
                           double* by_flops = nullptr) const;
  // What an einsum step's `bytes` (its operands and result) cost read cold
  // in a program, on the threads a rank gets: added to its products' time
  // by their flops (a product bound by its bytes already streams them).
  double host_cold_operand_seconds(double bytes) const;
  // `split`: the threads a kernel divides the step over (OpenMP's, for a
  // step of bfloat16 or of a program without float32 products; see
  // host_rank_threads); above 1, the one-thread factors and their roofline
  // shared out.
  double host_elementwise_seconds(double flops, double bytes, bool fused = false,
                                  int split = 1) const;
  // The BLAS threads a rank gets: every CPU for one rank, one each when the
  // ranks fill the CPUs.
  int host_rank_threads() const;
  // conv_in_program for the threads a rank gets.
  double host_conv_factor() const;
  // pool_in_program (pool_grad_in_program for a gradient) for the threads
  // a rank gets.
  double host_pool_factor(bool gradient) const;
  // max(flops / core_flops, bytes / the bandwidth of their size): an
  // elementwise step's roofline, before any factor.
  double host_roofline_seconds(double flops, double bytes) const;
  // A step that runs `factor` times its roofline at the cache's rates (the
  // in-program factors are measured on reference programs whose steps fit
  // the cache): beyond the cache, the memory's rate bounds it only where
  // that is slower (factor times the memory's roofline counted the CNN's
  // first-layer relus and pooling gradient up to 2x over).
  double host_paced_seconds(double flops, double bytes, double factor) const;
  double host_step_seconds(double work) const;
  // Seconds a rank loses before each collective step: oversubscribed_wait
  // (processes_oversubscribed_wait for ranks as processes, when set) on a
  // host with more ranks than CPUs, else 0.
  double host_collective_wait() const;
  // Seconds a collective step costs beyond its messages when `compute`
  // seconds of compute steps ran since the last collective: collective_wake
  // when the ranks are threads that fill at most the CPUs (more than one)
  // and cpu_spread * compute exceeds collective_wake_after, else 0.
  double host_collective_wake(double compute) const;
  // What the same ranks' arrival spread costs that step: collective_skew *
  // sqrt(`compute`), else 0.
  double host_collective_skew(double compute) const;
  // "threads", "processes" or "tcp".
  const char* host_ranks_name() const;
  // Seconds a run costs beyond its steps on a host of `ranks` ranks.
  double host_run_overhead(int64_t ranks) const;
  // Bandwidth and latency of the node fabric's links as the devices use them
  // (a host's processes: process_link_*).
  double fabric_bandwidth() const;
  double fabric_latency() const;

  // Presets with public figures (see `sources` of each): TPU pods by name,
  // and DGX machines by node count ("dgx-a100-4", "dgx-h100-32"). ValueError
  // naming the known presets for an unknown name.
  // "host" is this machine as `mtf-sim --calibrate` measured it, read from
  // host_machine_path() (IoError saying how to make it when missing).
  static Topology preset(const std::string& name);
  static std::vector<std::string> preset_names();
  // $MTF_HOST_MACHINE, else ~/.cache/mtf/host.machine.
  static std::string host_machine_path();
  // One override, e.g. set("link_bandwidth", "50e9"), set("chips", "8x8"),
  // set("network", "switched"), set("core_flops.bfloat16", "312e12").
  // ValueError naming the key and the accepted keys.
  void set(const std::string& key, const std::string& value);
  // "key=value,key=value" (also ';' separated).
  void apply_overrides(const std::string& spec);
  // A file of `key = value` lines (# comments); IoError / ValueError with
  // the file and line.
  void load_file(const std::string& path);
  // ValueError for impossible figures (non-positive sizes, bandwidths).
  void validate() const;
  std::string to_string() const;
  // Every setting as `key = value` lines that load_file() reads back.
  std::string to_file() const;
};

// How logical processors sit on physical cores: physical[pnum] is the
// physical core of logical processor pnum.
struct CoreMapping {
  std::vector<int> physical;
  // Per logical mesh axis: the hops between ring neighbours (processor 0's
  // ring, wraparound included).
  struct AxisRing {
    std::string axis;
    int size = 1;
    int max_hops = 0;
    double mean_hops = 0;
  };
  std::vector<AxisRing> rings;

  // Each logical mesh axis laid onto physical dimensions so that its ring
  // runs through neighbouring chips where it can (on-chip cores first, then
  // the torus dimensions in order; snake and comb orders for axes that span
  // several physical dimensions), as Mesh TensorFlow's
  // auto_logical_to_physical_tpu aims to. Falls back to row-major order
  // when the mesh dims do not factor onto the physical ones.
  static CoreMapping automatic(const MeshShape& mesh, const Topology& topo);
  // A user-given order: `physical` lists each logical processor's physical
  // core (a permutation; ValueError otherwise).
  static CoreMapping explicit_order(const MeshShape& mesh, const Topology& topo,
                                    std::vector<int> physical);
};

// Mesh TensorFlow's HierarchicalTiling: a logical mesh given as tiles of a
// physical mesh shape (say [8, 8, 2]: 8x8 chips, 2 cores each). The spec
// lists the logical axes outermost first, each with its tile shape (one
// entry per physical axis), or with no tile — at most one axis — for what
// the others leave. The axes' tiles nest: the last axis's processors fill a
// block of its tile's shape, the axis before arranges such blocks in its own
// tile's shape, and so on; the tiles' elementwise product must be the
// physical shape. Within a tile, processors follow a snake (boustrophedon)
// path, so that consecutive coordinates of an axis are physical neighbours.
// logical_to_physical[pnum] is the row-major index in physical_shape of
// logical processor pnum (the simulator's physical_order when physical_shape
// is its chips' grid then cores per chip). Errors name the axis and shapes.
struct HierarchicalTiling {
  struct Axis {
    std::string name;
    std::vector<int> tile;  // empty: the rest of the physical shape
  };
  HierarchicalTiling(std::vector<Axis> spec, std::vector<int> physical_shape);
  // The logical mesh of a spec on `num_processors`, as Mesh TensorFlow's
  // spec_to_mesh_shape: a tile's axis has the tile's product, the one
  // without a tile what the others leave.
  static MeshShape spec_to_mesh_shape(const std::vector<Axis>& spec, int64_t num_processors);

  std::vector<Axis> spec;  // every tile filled in
  std::vector<int> physical_shape;
  MeshShape mesh_shape;
  std::vector<int> logical_to_physical;
};

enum class SimMode { kFunctional, kCostOnly };

struct SimOptions {
  Topology topology;
  SimMode mode = SimMode::kFunctional;
  std::vector<int> physical_order;  // empty: CoreMapping::automatic
  std::string trace_path;           // Chrome trace-event JSON of each run, when set
  // Ring collectives and recursive doubling timed at once when all their
  // cores have reached them (O(n) fiber switches for n cores); false:
  // message by message, as every other collective (slower, for comparison).
  bool ring_timing = true;
};

struct SimReport {
  std::string topology, mesh, layout, mode;
  int64_t cores = 0;
  double step_time = 0;  // seconds: the last core's finish
  struct Core {
    double compute = 0, communication = 0, idle = 0;  // seconds
    int64_t bytes_sent = 0;
  };
  std::vector<Core> per_core;
  double flops_per_core = 0;
  double utilization = 0;  // achieved flop/s over peak, all cores
  int64_t messages = 0;
  int64_t link_bytes_max = 0;
  double link_bytes_mean = 0;  // over all directed links of the machine
  int links_used = 0, links_total = 0;
  struct OpRow {
    std::string op;
    double flops = 0;   // per core
    int64_t bytes = 0;  // sent per core in this op's collectives
    double time = 0;    // seconds, mean over cores
  };
  std::vector<OpRow> ops;  // in program order of first appearance
  // Bytes each core sends per step (mean over cores), by the kind of step
  // that sends them ("allreduce", "allgather", "halo", ...); kinds that
  // send nothing are left out.
  std::vector<std::pair<std::string, int64_t>> sent_by_kind;
  int64_t peak_memory = 0;  // bytes per core
  std::string peak_memory_at;
  // Of peak_memory: the step's tensors and collective buffers (not the
  // variables and their new values).
  int64_t peak_activation_memory = 0;
  std::vector<CoreMapping::AxisRing> rings;
  // Runs this report covers: 1 for one run; more after followed_by (a step
  // of gradient accumulation: its microbatch runs and the update run).
  int64_t runs = 1;

  // This run and then `next` on the same mesh, as one step: times, flops,
  // messages and bytes add (per core, per op by name, per kind), memory is
  // the larger peak; utilization is the time-weighted mean; link_bytes_max
  // adds the runs' maxima (an upper bound: the busiest links may differ).
  // ValueError when the reports are of different meshes or topologies.
  SimReport followed_by(const SimReport& next) const;
  double mean_compute() const;
  double mean_communication() const;
  double mean_idle() const;
  // Readable report; `max_ops` rows of the op table (the most costly).
  std::string to_table(int max_ops = 12) const;
  std::string to_json() const;
};

}  // namespace mtf
