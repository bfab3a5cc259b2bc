// The calibration's reference programs; see reference_programs.h.
#include "reference_programs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "calibration_timing.h"
#include "models/cnn.h"
#include "models/mlp.h"
#include "models/transformer.h"
#include "mtf/errors.h"
#include "rank_links.h"
#include "wait_fit.h"

namespace mtf::tools {
namespace {

// A reference program simulated on `machine` (cost only) on the mesh and
// layout of `simulated`, or on `ranks` replicated ranks: its report, or its
// step.
SimReport simulated_report(Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
                           const Topology& machine, MeshConfig simulated) {
  simulated.impl = MeshImpl::kSimulated;
  simulated.sim->mode = SimMode::kCostOnly;
  simulated.sim->topology = machine;  // its devices: the mesh's ranks
  Session sim(graph, simulated);
  sim.run({loss}, {}, train);
  return sim.simulation_report();
}

SimReport simulated_report(Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
                           const Topology& machine, int ranks) {
  MeshConfig replicated;
  replicated.mesh_shape = MeshShape("all:" + std::to_string(ranks));
  return simulated_report(graph, loss, train, machine, replicated);
}

double simulated_step(Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
                      const Topology& machine, int ranks) {
  return simulated_report(graph, loss, train, machine, ranks).step_time;
}

// One program's steps, profiled on one core (real runs) and simulated on
// `machine`, added into *t by kind: convolutions, pooling, products
// (einsums) and the rest (with `spatial_only`, convolutions and pooling
// only).
void time_program(Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
                  const Feeds& feeds, const Topology& machine, bool spatial_only, ProgramTimes* t) {
  MeshConfig real;
  real.profile = true;
  Session s(graph, real);
  for (int i = 0; i < 3; ++i) s.run({loss}, feeds, train);
  s.reset_profile();
  // The CNN's steps are few and short (batch 8): more runs, so that its
  // factors do not rest on a few milliseconds of a VM's phase.
  const int runs = spatial_only ? 45 : 15;
  for (int i = 0; i < runs; ++i) s.run({loss}, feeds, train);
  const Profile profile = s.profile();
  // Each op's simulated time on `topology`.
  auto simulate = [&](const Topology& topology) {
    std::map<std::string, double> time;
    for (const SimReport::OpRow& row : simulated_report(graph, loss, train, topology, 1).ops)
      time[row.op] += row.time;
    return time;
  };
  const std::map<std::string, double> sim_time = simulate(machine);
  // The products' bytes as the simulator counts them: what a cost per byte
  // adds to them, probed (not for the CNN, whose products are not summed).
  constexpr double kProbe = 1e-10;
  std::map<std::string, double> probe_time;
  if (!spatial_only) {
    Topology probe = machine;
    probe.host.one_cpu.gemm_cold_seconds_per_byte += kProbe;
    probe.host.all_cpus.gemm_cold_seconds_per_byte += kProbe;
    probe_time = simulate(probe);
  }
  if (profile.programs.empty()) return;
  for (const ProfileRow& row : profile.programs.front().by_op) {
    const std::string name = row.name.substr(0, row.name.find(' '));
    auto it = sim_time.find(name);
    if (it == sim_time.end() || row.type.find("allreduce") != std::string::npos) continue;
    if (row.type.rfind("conv", 0) == 0) {
      t->conv_real += row.seconds;
      t->conv_sim += it->second;
      continue;
    }
    if (const PoolingStep pool = pooling_step(row.type); pool != PoolingStep::kNone) {
      const bool gradient = pool == PoolingStep::kGradient;
      (gradient ? t->pool_grad_real : t->pool_real) += row.seconds;
      (gradient ? t->pool_grad_sim : t->pool_sim) += it->second;
      continue;
    }
    if (spatial_only) continue;
    const bool gemm = row.type.rfind("einsum", 0) == 0;
    (gemm ? t->gemm_real : t->other_real) += row.seconds;
    (gemm ? t->gemm_sim : t->other_sim) += it->second;
    if (gemm) t->gemm_bytes += std::max(0.0, probe_time[name] - it->second) / kProbe;
    if (!gemm && row.calls > 0)
      (row.type == "fused" ? t->fused_steps : t->other_steps)
          .push_back({it->second / row.calls, row.seconds / row.calls});
  }
}

// Feeds of random pixels in [0, 1] for `images` and labels of 10 classes.
Feeds random_images(const Tensor& images, const Tensor& labels, std::mt19937& rng) {
  HostTensor x(images.shape(), float32), y(labels.shape(), int32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < y.num_elements(); ++i)
    y.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  return {{images, x}, {labels, y}};
}

}  // namespace

// The reference programs: the MLP and a one-layer Transformer LM, smaller
// than anything `bench/sim_validation.py` checks, on random data; `use`
// gets each one's graph, loss, training ops and feeds.
void for_each_reference_program(const ProgramUse& use, int batch_scale) {
  std::mt19937 rng(7);
  {
    models::MlpConfig c;
    c.batch_size = 64 * batch_scale;
    c.hidden = 512;
    models::Mlp mlp(c);
    use(mlp.graph(), mlp.loss, mlp.train_ops, random_images(mlp.images, mlp.labels, rng));
  }
  {
    models::TransformerConfig c;
    c.layers = 1;
    c.d_model = 128;
    c.d_ff = 512;
    c.heads = 4;
    c.d_kv = 32;
    c.length = 128;
    c.batch = 8 * batch_scale;
    models::TransformerLm lm(c);
    HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      in.data<int32_t>()[i] = static_cast<int32_t>(rng() % c.vocab);
      tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % c.vocab);
    }
    use(lm.graph(), lm.loss, lm.train_ops, {{lm.inputs, in}, {lm.targets, tg}});
  }
}

namespace {

// The CNN at batch 8, for its convolutions and pooling (the only reference
// program that has them; its other steps are left out of the elementwise
// fit, which the MLP and the LM make).
void for_reference_cnn(const ProgramUse& use) {
  std::mt19937 rng(7);
  models::CnnConfig c;
  c.batch_size = 8;
  models::Cnn cnn(c);
  use(cnn.graph(), cnn.loss, cnn.train_ops, random_images(cnn.images, cnn.labels, rng));
}

}  // namespace

ProgramTimes time_reference_programs(const Topology& machine) {
  ProgramTimes t;
  for_each_reference_program(
      [&](Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
          const Feeds& feeds) { time_program(graph, loss, train, feeds, machine, false, &t); });
  for_reference_cnn(
      [&](Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
          const Feeds& feeds) { time_program(graph, loss, train, feeds, machine, true, &t); });
  return t;
}

// What filling every CPU costs a mesh's steps, measured as a user's run
// meets it: the reference programs at `cpus` times their batch,
// data-parallel over `cpus` ranks as threads (the default pool execution;
// each rank the reference's own batch and an allreduce per gradient),
// against the same on one rank pinned to `cpu`, the CPU of the one-thread
// figures, runs alternating so that the machine's drift falls on both,
// every step timed. Replicated ranks (each the whole program, no
// messages) read 1.01-1.07 on a steady VM where the rows of two threads
// then took 3-15% longer than predicted: the split steps, the gradients'
// traffic and the collectives they meet were not in them. REQUIRES: one
// BLAS thread.
BusyFit busy_factor(int cpus, int cpu, const Topology& machine) {
  BusyFit fit;
  double fastest = 0, slowest = 0;
  constexpr double kSkewProbe = 1e-3;
  for_each_reference_program(
      [&](Graph& graph, const Tensor& loss, const std::vector<Operation*>& train,
          const Feeds& feeds) {
        MeshConfig alone_config, busy_config;
        alone_config.profile = busy_config.profile = true;  // two clock reads a step, both sides
        busy_config.mesh_shape = MeshShape("all:" + std::to_string(cpus));
        busy_config.layout = LayoutRules("batch:all");
        Session one(graph, alone_config), all(graph, busy_config);
        auto run_alone = [&] {
          PinnedTo pin(cpu);
          one.run({loss}, feeds, train);
        };
        auto run_busy = [&] { all.run({loss}, feeds, train); };
        const auto [alone_run, busy_run] = time_alternating(run_alone, run_busy, 3, 15, [&] {
          one.reset_profile();
          all.reset_profile();
        });
        fit.runs.push_back({alone_run, busy_run});
        // Each side's compute steps a run: the rank alone's, and the mean
        // rank's at once (a rank that waits at a collective is not
        // computing), with the slowest and fastest ranks'.
        for (const ProgramProfile& program : one.profile().programs)
          fit.alone += program.step_seconds;
        double compute = 0, collectives = 0, lo = 0, hi = 0;
        for (const ProgramProfile& program : all.profile().programs) {
          double p_lo = 0, p_hi = 0;
          for (const ProcessorTime& t : program.by_processor) {
            compute += t.compute_seconds / cpus;
            collectives += t.collective_seconds / cpus;
            p_lo = p_lo > 0 ? std::min(p_lo, t.compute_seconds) : t.compute_seconds;
            p_hi = std::max(p_hi, t.compute_seconds);
          }
          lo += p_lo;
          hi += p_hi;
        }
        fit.compute += compute;
        fit.collectives += collectives;
        fastest += lo;
        slowest += hi;
        // The same simulated: the rank alone with one CPU and one thread, as
        // it ran (a host of all the CPUs would give it every CPU's
        // products); the ranks at once with neither factor nor skew, their
        // spread as measured (the wake it gates is counted apart).
        Topology one_cpu = machine, plain = machine;
        one_cpu.host_cpus = 1;
        plain.host.busy_in_program = 1;
        plain.host.collective_skew = 0;
        plain.host.cpu_spread = lo > 0 ? std::max(0.0, hi / lo - 1) : 0.0;
        const SimReport a = simulated_report(graph, loss, train, one_cpu, MeshConfig{});
        MeshConfig split;
        split.mesh_shape = busy_config.mesh_shape;
        split.layout = busy_config.layout;
        const SimReport b = simulated_report(graph, loss, train, plain, split);
        // What a unit of skew adds to the collectives (the sum over them of
        // the square root of the compute before each), probed.
        Topology probed = plain;
        probed.host.collective_skew = kSkewProbe;
        const SimReport c = simulated_report(graph, loss, train, probed, split);
        fit.simulated_alone += a.per_core.empty() ? 0 : a.per_core.front().compute;
        const auto n = static_cast<double>(b.per_core.size());
        for (size_t r = 0; r < b.per_core.size(); ++r) {
          fit.simulated_compute += b.per_core[r].compute / n;
          fit.simulated_collectives += b.per_core[r].communication / n;
          fit.per_skew +=
              (c.per_core[r].communication - b.per_core[r].communication) / n / kSkewProbe;
        }
      },
      cpus);
  fit.spread = fastest > 0 ? std::max(0.0, slowest / fastest - 1) : 0.0;
  if (fit.alone > 0 && fit.compute > 0 && fit.simulated_alone > 0 && fit.simulated_compute > 0)
    fit.factor = fit.compute / fit.alone / (fit.simulated_compute / fit.simulated_alone);
  if (fit.per_skew > 0)
    fit.skew = std::max(0.0, fit.collectives - fit.simulated_collectives) / fit.per_skew;
  return fit;
}

// The two runs compared are replicated ranks as threads (each the whole
// program, no messages, so no waits at collectives): twice as many as CPUs,
// and as many, runs alternating; less the runs' overhead, summed over the
// programs (time-weighted, the LM dominates).
double crowded_factor(int cpus, double threads_run_overhead, const Topology& machine,
                      std::vector<std::pair<double, double>>* runs) {
  double busy_work = 0, crowded_work = 0, busy_sim = 0, crowded_sim = 0;
  Topology plain = machine;
  plain.host.oversubscribed_in_program = 1;
  for_each_reference_program([&](Graph& graph, const Tensor& loss,
                                 const std::vector<Operation*>& train, const Feeds& feeds) {
    MeshConfig busy_config, crowded_config;
    busy_config.mesh_shape = MeshShape("all:" + std::to_string(cpus));
    crowded_config.mesh_shape = MeshShape("all:" + std::to_string(2 * cpus));
    Session busy(graph, busy_config), crowded(graph, crowded_config);
    auto run_busy = [&] { busy.run({loss}, feeds, train); };
    auto run_crowded = [&] { crowded.run({loss}, feeds, train); };
    const auto [busy_run, crowded_run] = time_alternating(run_busy, run_crowded, 2, 9);
    runs->push_back({busy_run, crowded_run});
    busy_work += std::max(0.0, busy_run - threads_run_overhead);
    crowded_work += std::max(0.0, crowded_run - threads_run_overhead);
    busy_sim += simulated_step(graph, loss, train, plain, cpus) - plain.host.threads_run_overhead;
    crowded_sim +=
        simulated_step(graph, loss, train, plain, 2 * cpus) - plain.host.threads_run_overhead;
  });
  if (busy_work <= 0 || crowded_work <= 0 || busy_sim <= 0 || crowded_sim <= 0) return 1.0;
  return crowded_work / busy_work / (crowded_sim / busy_sim);
}

namespace {

// The reference MLP of the oversubscribed wait below on `ranks` ranks: the
// median time of one rank's steps (every rank makes the same calls).
models::MlpConfig reference_mlp(int ranks) {
  models::MlpConfig c;
  c.batch_size = 64 * ranks;
  c.hidden = 512;
  return c;
}

// Data-parallel, or hybrid (half the ranks along the batch, pairs along
// the hidden units: many small collectives).
MeshConfig reference_mlp_mesh(int ranks, bool hybrid = false) {
  MeshConfig real;
  if (hybrid) {
    real.mesh_shape = MeshShape("b:" + std::to_string(ranks / 2) + ";m:2");
    real.layout = LayoutRules("batch:b;hidden:m");
  } else {
    real.mesh_shape = MeshShape("b:" + std::to_string(ranks));
    real.layout = LayoutRules("batch:b");
  }
  return real;
}

double time_reference_mlp(int ranks, const MeshConfig& config) {
  models::Mlp mlp(reference_mlp(ranks));
  std::mt19937 rng(11);
  HostTensor x(mlp.images.shape(), float32), y(mlp.labels.shape(), int32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < y.num_elements(); ++i)
    y.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  Session s(mlp.graph(), config);
  return time_median(
      [&] {
        s.run({mlp.loss}, {{mlp.images, x}, {mlp.labels, y}}, mlp.train_ops);
      },
      15, 0);
}

}  // namespace

double time_reference_mlp_rank(Transport& t, bool hybrid) {
  MeshConfig rank = reference_mlp_mesh(t.size(), hybrid);
  rank.process_transport = std::shared_ptr<Transport>(&t, [](Transport*) {});
  return time_reference_mlp(t.size(), rank);
}

WaitFit oversubscribed_wait(const Topology& m, Topology::HostRanks how, int ranks, bool hybrid) {
  const models::MlpConfig c = reference_mlp(ranks);
  const bool threads = how == Topology::HostRanks::kThreads;
  auto measure = [&](bool h) {
    if (threads) return time_reference_mlp(ranks, reference_mlp_mesh(ranks, h));
    const std::string answer = run_ranks_as_processes(h ? "mlp-hybrid" : "mlp", ranks, true);
    const double t = std::atof(answer.c_str());
    if (!(t > 0))
      throw IoError("calibration: rank 0 of the reference MLP answered \"" + answer + "\"");
    return t;
  };
  // The reference's step simulated on `simulated`'s mesh (none: one rank
  // with every CPU) over `devices` ranks, with a wait per collective and
  // `extra` seconds on the crowded links' latency (ranks as processes only).
  auto simulate = [&](MeshConfig simulated, int devices, double wait, double extra) {
    models::Mlp mlp(c);
    simulated.impl = MeshImpl::kSimulated;
    simulated.sim->mode = SimMode::kCostOnly;
    simulated.sim->topology = m;
    Topology& t = simulated.sim->topology;
    t.devices_per_node = devices;
    t.host_ranks = devices > 1 ? how : Topology::HostRanks::kThreads;
    t.host.oversubscribed_wait = wait;
    t.host.processes_oversubscribed_wait = wait;
    t.host.processes_oversubscribed_latency += extra;
    Session sim(mlp.graph(), simulated);
    sim.run({mlp.loss}, {}, mlp.train_ops);
    return sim.simulation_report().step_time;
  };
  auto predict = [&](bool h, double wait, double extra) {
    return simulate(reference_mlp_mesh(ranks, h), ranks, wait, extra);
  };
  // The machine's level at the moment of each measurement: the reference on
  // one rank just before and just after it, against its simulation. The
  // crowded step is fitted as its ratio to that, at the level the rest of
  // the figures were measured at; fitted in absolute time, the wait and
  // latency took up the difference between the moment the crowded step ran
  // and the moments the other figures were measured (1.68 times the
  // one-rank step predicted where 1.30 ran).
  WaitFit fit;
  fit.one_rank_predicted = simulate(MeshConfig{}, 1, 0, 0);
  auto at_level = [&](bool h) {
    const double before = time_reference_mlp(ranks, MeshConfig{});
    const double crowded = measure(h);
    const double after = time_reference_mlp(ranks, MeshConfig{});
    const double one_rank = std::sqrt(before * after);
    fit.one_rank_measured.push_back(one_rank);
    return crowded / one_rank * fit.one_rank_predicted;
  };
  // Each reference's step with neither, and what a second of each adds (its
  // collectives, and its messages, on the critical path), probed from 0:
  // prediction(w, e) = without + per_wait * w + per_extra * e.
  constexpr double kProbe = 1e-4;
  const bool fit_latency = !threads && hybrid;
  std::vector<WaitReference> refs;
  for (const bool h : {false, true}) {
    if (h && !hybrid) continue;
    WaitReference r;
    r.measured = at_level(h);
    r.without = predict(h, 0, 0);
    r.per_wait = (predict(h, kProbe, 0) - r.without) / kProbe;
    r.per_extra = fit_latency ? (predict(h, 0, kProbe) - r.without) / kProbe : 0;
    refs.push_back(r);
  }
  std::tie(fit.wait, fit.extra_latency) = fit_wait_and_latency(refs, 0.01, 0.01);
  fit.measured = refs[0].measured;
  fit.predicted = predict(false, fit.wait, fit.extra_latency);
  if (refs.size() > 1) {
    fit.hybrid_measured = refs[1].measured;
    fit.hybrid_predicted = predict(true, fit.wait, fit.extra_latency);
  }
  return fit;
}

}  // namespace mtf::tools
