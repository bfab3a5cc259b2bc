// reference_programs.h — the calibration's reference programs (the MLP and
// a one-layer Transformer LM, smaller than anything the validation checks),
// and what mtf-sim --calibrate measures on them: how a real program's steps
// differ from kernels timed alone, what filling every CPU costs, and what a
// rank loses at each collective when ranks outnumber the CPUs.
#pragma once

#include <sched.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::tools {

// The CPUs this process may run on, in order (when the kernel does not say:
// as many as std::thread counts, from 0).
inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      cpus.push_back(static_cast<int>(c));
  return cpus;
}

// Keeps the calling thread on one CPU while alive. The CPUs of a VM can
// differ by 10% and more in speed (measured: one 10% slower on products and
// 45% on elementwise steps than the other, for hours); one-thread figures
// are all measured on the same one, and busy_factor compares every CPU's
// pace with it.
class PinnedTo {
 public:
  explicit PinnedTo(int cpu) {
    CPU_ZERO(&saved_);
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinnedTo() {
    if (pinned_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  PinnedTo(const PinnedTo&) = delete;
  PinnedTo& operator=(const PinnedTo&) = delete;

 private:
  cpu_set_t saved_;
  bool pinned_ = false;
};

// A reference program's compute steps on one core, measured (profiled
// runs) and simulated on `machine`: seconds per run of its matrix products,
// convolutions, pooling and everything else.
struct ProgramTimes {
  double gemm_real = 0, gemm_sim = 0, other_real = 0, other_sim = 0;
  double gemm_bytes = 0;  // the products' operands and results, as the simulator counts them
  double conv_real = 0, conv_sim = 0;                  // convolutions and their gradients
  double pool_real = 0, pool_sim = 0;                  // pooling
  double pool_grad_real = 0, pool_grad_sim = 0;        // pooling's gradients
  std::vector<std::pair<double, double>> other_steps;  // (simulated, measured) per op
  std::vector<std::pair<double, double>> fused_steps;  // the same for fused chains
};

// Each reference program on random data: `use` gets its graph, loss,
// training ops and feeds.
using ProgramUse = std::function<void(Graph&, const Tensor& loss,
                                      const std::vector<Operation*>& train, const Feeds&)>;
// (`batch_scale` times their batch: data-parallel runs keep each rank's.)
void for_each_reference_program(const ProgramUse& use, int batch_scale = 1);

// The reference programs profiled op by op on one core, against their
// simulation on `machine` (products and everything else, summed), and the
// reference CNN's convolutions.
ProgramTimes time_reference_programs(const Topology& machine);

// What filling `cpus` CPUs with ranks costs their steps, against one rank
// pinned to `cpu` (the definition is beside the code), as seconds a run
// summed over the reference programs (at `cpus` times their batch), and
// the figures of `machine`'s host measured on them:
//   factor  busy_in_program: the mean rank's compute steps at once over the
//           rank's alone, over the same ratio simulated on `machine` with the
//           factor 1 (what its shared cache and memory already give);
//   spread  cpu_spread: the slowest rank's compute steps over the fastest's,
//           less 1;
//   skew    collective_skew: the ranks' seconds in collectives beyond their
//           simulation (with neither factor nor skew), per second of their
//           compute steps, at least 0.
// `runs` gets each program's (alone, at once) seconds per run.
struct BusyFit {
  double factor = 1, spread = 0, skew = 0;
  double alone = 0, simulated_alone = 0;  // the rank alone's compute steps
  double compute = 0, simulated_compute = 0, collectives = 0, simulated_collectives = 0;
  double per_skew = 0;  // seconds of collectives a unit of skew adds
  std::vector<std::pair<double, double>> runs;
};
BusyFit busy_factor(int cpus, int cpu, const Topology& machine);

// What more ranks than CPUs cost their compute beyond taking turns and
// beyond busy_in_program, which both layouts pay
// (HostFigures::oversubscribed_in_program): the reference programs on
// 2 x `cpus` ranks against `cpus` ranks, over the same ratio simulated on
// `machine` with the factor 1 (the definition is beside the code); `runs`
// gets each program's (cpus ranks, 2 x cpus ranks) seconds per run.
double crowded_factor(int cpus, double threads_run_overhead, const Topology& machine,
                      std::vector<std::pair<double, double>>* runs);

// The reference MLP measured on `ranks` ranks (more than CPUs) of the kind
// `how` (threads, or processes over TCP and shared memory), the wait per
// collective step that makes its simulation on machine m (with its
// oversubscribed_in_program) match, and the
// simulation with that wait (of the data-parallel layout). With `hybrid`
// (processes only), the hybrid layout too, and the wait and the latency
// added to the crowded links' that fit both best (least squares of the
// relative errors, both >= 0): a wait per collective alone cannot fit both
// (the data-parallel MLP has few collectives but more rounds in each than
// the hybrid's), a cost per message can. Each crowded step counts as its
// ratio to the reference on one rank run just before and after it, times
// that one-rank step's simulation: the machine's level at the moment drops
// out of the fit.
struct WaitFit {
  double wait = 0, extra_latency = 0, measured = 0, predicted = 0;
  double hybrid_measured = 0, hybrid_predicted = 0;
  // The reference on one rank beside each measurement (measured), and
  // simulated: the crowded steps are taken as their ratio to it times the
  // simulated one-rank step (`measured` and `hybrid_measured` are so).
  std::vector<double> one_rank_measured;
  double one_rank_predicted = 0;
};
WaitFit oversubscribed_wait(const Topology& m, Topology::HostRanks how, int ranks, bool hybrid);

// One rank's part of that measurement as a process of its own (the
// calibration's "mlp" and "mlp-hybrid" jobs): the median step time.
double time_reference_mlp_rank(Transport& t, bool hybrid);

}  // namespace mtf::tools
