// mtf-sim: simulate a built-in model on a TPU-shaped torus and print where
// the time goes. See --help.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "calibration_median.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "host_calibration.h"
#include "models/mlp.h"
#include "models/transformer.h"
#include "models/transformer_decoder.h"
#include "models/transformer_encdec.h"
#include "models/unet3d.h"
#include "mtf/mtf.h"
#include "rank_links.h"
#include "speed_watch.h"

namespace {

using namespace mtf;

// Synthetic Fashion-MNIST-shaped batches: a simulation needs shapes, and in
// functional mode some data; it does not need the data set.
Feeds mlp_feeds(models::Mlp& mlp, uint64_t step) {
  std::mt19937_64 rng(1000 + step);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  HostTensor x(mlp.images.shape(), float32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = pixel(rng);
  HostTensor y(mlp.labels.shape(), int32);
  for (int64_t i = 0; i < y.num_elements(); ++i) y.data<int32_t>()[i] = label(rng);
  return {{mlp.images, x}, {mlp.labels, y}};
}

// Random token windows for the LM in functional mode.
Feeds lm_feeds(models::TransformerLm& lm, uint64_t step) {
  std::mt19937_64 rng(2000 + step);
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  const auto v = static_cast<uint64_t>(lm.vocab.size);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    in.data<int32_t>()[i] = static_cast<int32_t>(rng() % v);
    tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % v);
  }
  return {{lm.inputs, in}, {lm.targets, tg}};
}

// Random volumes and per-voxel classes for the U-Net in functional mode.
Feeds unet_feeds(models::UNet3d& unet, uint64_t step) {
  std::mt19937_64 rng(3000 + step);
  std::uniform_real_distribution<float> voxel(0.f, 1.f);
  HostTensor x(unet.volumes.shape(), float32), y(unet.labels.shape(), int32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = voxel(rng);
  const auto k = static_cast<uint64_t>(unet.classes_dim.size);
  for (int64_t i = 0; i < y.num_elements(); ++i)
    y.data<int32_t>()[i] = static_cast<int32_t>(rng() % k);
  return {{unet.volumes, x}, {unet.labels, y}};
}

// The LM's shape; a training step's batch, or (decoding) its caches' length.
std::string describe_lm(const models::TransformerConfig& c, bool decoding = false) {
  char batch[96];
  if (decoding)
    std::snprintf(batch, sizeof(batch), "key/value caches of %lld tokens",
                  static_cast<long long>(c.length));
  else
    std::snprintf(batch, sizeof(batch), "batch %lld x %lld tokens", static_cast<long long>(c.batch),
                  static_cast<long long>(c.length));
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "model: transformer, %lld layers, d_model %lld, d_ff %lld, %lld heads of %lld, "
                "vocab %lld, %s, %.3gB parameters",
                static_cast<long long>(c.layers), static_cast<long long>(c.d_model),
                static_cast<long long>(c.d_ff), static_cast<long long>(c.heads),
                static_cast<long long>(c.d_kv), static_cast<long long>(c.vocab), batch,
                static_cast<double>(c.num_parameters()) / 1e9);
  std::string s = buf;
  if (!decoding && c.microbatches > 1) {
    s += ", trained as " + std::to_string(c.microbatches) + " microbatches of " +
         std::to_string(c.batch / c.microbatches) + " with gradients accumulated";
  }
  if (c.moe_experts > 0)
    s += ", " + std::to_string(c.moe_experts) + " experts per feed-forward block";
  if (c.recompute) s += ", layers recomputed in the backward pass";
  return s;
}

// A built-in model: its graph, the step simulated (a training step, or a
// decoding step), data for a step and a one-line description.
struct Model {
  std::shared_ptr<void> owner;
  Graph* graph = nullptr;
  Tensor loss;                                         // the step's fetch
  const std::vector<Operation*>* train_ops = nullptr;  // and its targets
  // Gradient accumulation: train_ops run once per microbatch, then
  // apply_ops once (nullptr: a step is one run).
  int64_t microbatches = 1;
  const std::vector<Operation*>* apply_ops = nullptr;
  std::function<Feeds(uint64_t)> feeds;
  std::string description;

  template <typename M, typename FeedFn>
  static Model of(std::shared_ptr<M> m, FeedFn feed, std::string description) {
    Model r;
    r.graph = &m->graph();
    r.loss = m->loss;
    r.train_ops = &m->train_ops;
    r.feeds = [m = m.get(), feed](uint64_t step) { return feed(*m, step); };
    r.description = std::move(description);
    r.owner = std::move(m);
    return r;
  }
};

// The LM and its decoder, for --decode: a step is one token per sequence.
struct DecodingLm {
  explicit DecodingLm(const models::TransformerConfig& c, int64_t batch)
      : lm(c), decoder(lm, batch) {}
  models::TransformerLm lm;
  models::TransformerDecoder decoder;
};

Model decoding_model(const models::TransformerConfig& tc, int64_t batch) {
  auto d = std::make_shared<DecodingLm>(tc, batch);
  Model r;
  r.graph = &d->lm.graph();
  r.loss = d->decoder.logits;
  r.train_ops = &d->decoder.write_caches;
  r.feeds = [d = d.get()](uint64_t step) {
    std::mt19937_64 rng(4000 + step);
    std::vector<int32_t> tokens(d->decoder.batch.size);
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % d->decoder.vocab());
    const int32_t p = static_cast<int32_t>(step % d->decoder.length());
    return Feeds{{d->decoder.token, HostTensor::from_ints(d->decoder.token.shape(), tokens)},
                 {d->decoder.position, HostTensor::from_ints(Shape(), {p})}};
  };
  r.description = describe_lm(tc, true) + "; decoding one token per step for " +
                  std::to_string(batch) + " sequence(s) with key/value caches";
  r.owner = std::move(d);
  return r;
}

// The sequence-to-sequence Transformer at the transformer flags' sizes:
// --layers in each stack, --length for sources and targets, random ids.
Model encdec_model(const cli::Flags& flags, int64_t microbatches) {
  const models::TransformerConfig tc =
      models::transformer_config_from_flags(flags, models::TransformerConfig::paper(4096, 4), true);
  models::EncDecConfig c = models::encdec_config_like(tc);
  c.microbatches = microbatches;
  auto m = std::make_shared<models::TransformerEncDec>(c);
  int64_t parameters = 0;
  for (const Tensor& v : m->graph().trainable_variables()) parameters += v.shape().num_elements();
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "model: transformer_encdec, %lld + %lld layers, d_model %lld, d_ff %lld, %lld "
                "heads of %lld, vocab %lld, batch %lld x %lld + %lld tokens, %.3gB parameters",
                static_cast<long long>(c.encoder_layers), static_cast<long long>(c.decoder_layers),
                static_cast<long long>(c.d_model), static_cast<long long>(c.d_ff),
                static_cast<long long>(c.heads), static_cast<long long>(c.d_kv),
                static_cast<long long>(c.vocab), static_cast<long long>(c.batch),
                static_cast<long long>(c.input_length), static_cast<long long>(c.target_length),
                static_cast<double>(parameters) / 1e9);
  std::string description = buf;
  if (microbatches > 1) {
    description += ", trained as " + std::to_string(microbatches) + " microbatches of " +
                   std::to_string(c.rows_per_run()) + " with gradients accumulated";
  }
  auto feeds = [](models::TransformerEncDec& t, uint64_t step) {
    std::mt19937_64 rng(5000 + step);
    const int64_t vocab = t.vocab.size;
    HostTensor in(t.inputs.shape(), int32), tg(t.targets.shape(), int32);
    for (HostTensor* h : {&in, &tg})
      for (int64_t i = 0; i < h->num_elements(); ++i)
        h->data<int32_t>()[i] = 3 + static_cast<int32_t>(rng() % (vocab - 3));
    return t.feeds(in, tg);
  };
  Model r = Model::of(m, feeds, description);
  r.microbatches = microbatches;
  if (microbatches > 1) r.apply_ops = &m->apply_ops;
  return r;
}

// The model of --model at `microbatches` (1 unless a transformer's training
// step).
// Whether --model's step can accumulate gradients (--microbatches).
bool accumulates(const std::string& name, const cli::Flags& flags) {
  return (name == "transformer" && !flags.boolean("decode")) || name == "transformer_encdec";
}

Model make_model(const std::string& name, const cli::Flags& flags, int64_t microbatches) {
  const int64_t batch = flags.i64("batch_size");
  if (batch < 0) throw ValueError("--batch_size must be positive (or 0 for the model's default)");
  if (flags.boolean("decode") && name != "transformer")
    throw ValueError("--decode needs --model transformer");
  if (microbatches != 1 && !accumulates(name, flags))
    throw ValueError(
        "--microbatches needs --model transformer or transformer_encdec (a training "
        "step)");
  if (name == "mlp") {
    models::MlpConfig mc;
    mc.batch_size = batch ? batch : 512;
    mc.hidden = flags.i64("hidden");
    auto m = std::make_shared<models::Mlp>(mc);
    return Model::of(m, mlp_feeds, "model: mlp, batch " + std::to_string(mc.batch_size));
  }
  if (name == "transformer") {
    models::TransformerConfig tc = models::transformer_config_from_flags(
        flags, models::TransformerConfig::paper(4096, 4), true);
    if (flags.boolean("decode")) {
      const int64_t b = flags.i64("decode_batch");
      if (b < 1) throw ValueError("--decode_batch must be at least 1");
      return decoding_model(tc, b);
    }
    tc.microbatches = microbatches;
    auto m = std::make_shared<models::TransformerLm>(tc);
    Model r = Model::of(m, lm_feeds, describe_lm(tc));
    r.microbatches = microbatches;
    if (microbatches > 1) r.apply_ops = &m->apply_ops;
    return r;
  }
  if (name == "transformer_encdec") return encdec_model(flags, microbatches);
  if (name == "unet3d") {
    models::UNet3dConfig uc;
    if (batch) uc.batch = batch;
    uc.side = flags.i64("side");
    uc.channels = flags.i64("channels");
    uc.levels = flags.i64("levels");
    auto m = std::make_shared<models::UNet3d>(uc);
    const std::string d = m->describe();
    return Model::of(m, unet_feeds, d);
  }
  throw ValueError("--model: unknown model \"" + name +
                   "\"; built-in: mlp, transformer, transformer_encdec, unet3d");
}

std::vector<int> parse_mapping(const std::string& s) {
  std::vector<int> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      r.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw ValueError("--mapping needs comma-separated physical core numbers, got \"" + item +
                       "\"");
    }
  }
  return r;
}

// Written beside the target and renamed over it, so a failed calibration
// leaves an earlier file whole.
void write_machine_file(const std::string& path, const Topology& machine) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::error_code ec;
    std::filesystem::create_directories(path.substr(0, slash), ec);
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# " << machine.name << ": written by mtf-sim --calibrate\n" << machine.to_file();
    out.flush();
    if (!out) throw IoError("cannot write the machine file \"" + tmp + "\"");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw IoError("cannot rename \"" + tmp + "\" to \"" + path + "\"");
}

// --from_calibrations: the machine files it lists (each must exist and
// describe a calibrated host), combined; *steadiness gets their
// steadiness_report.
Topology combined_calibrations(const std::string& list, std::string* steadiness) {
  std::vector<Topology> machines;
  std::stringstream in(list);
  std::string path;
  while (std::getline(in, path, ',')) {
    if (path.empty()) continue;
    Topology t;
    t.load_file(path);
    if (t.host_cpus < 1)
      throw ValueError("--from_calibrations: \"" + path +
                       "\" is not a calibrated host (no host_cpus); list files written by "
                       "mtf-sim --calibrate");
    machines.push_back(t);
  }
  if (machines.empty())
    throw ValueError("--from_calibrations: no machine files in \"" + list + "\"");
  *steadiness = tools::steadiness_report(machines);
  return tools::median_of_calibrations(machines);
}

int calibration_rounds(const cli::Flags& flags) {
  const int64_t rounds = flags.i64("calibration_rounds");
  if (rounds < 1 || rounds > 100)
    throw ValueError("--calibration_rounds must be 1 to 100, not " + std::to_string(rounds));
  return static_cast<int>(rounds);
}

void progress(int64_t done, int64_t total, double seconds) {
  if (!isatty(STDERR_FILENO) || total < 2) return;
  const int width = 30;
  const int filled = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r[%s%s] step %lld/%lld  %.1f s", std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), static_cast<long long>(done),
               static_cast<long long>(total), seconds);
  if (done == total) std::fprintf(stderr, "\n");
}

// --microbatches: the one count given, or for "auto" every divisor of the
// transformer's batch, fewest parts first.
std::vector<int64_t> microbatch_counts(const cli::Flags& flags) {
  const std::string text = flags.str("microbatches");
  if (text != "auto") {
    const int64_t n = flags.i64("microbatches");
    if (n < 1) throw ValueError("--microbatches must be at least 1 (or auto), not " + text);
    return {n};
  }
  if (!accumulates(flags.str("model"), flags)) {
    throw ValueError(
        "--microbatches auto needs --model transformer or transformer_encdec (a "
        "training step)");
  }
  const int64_t batch =
      models::transformer_config_from_flags(flags, models::TransformerConfig::paper(4096, 4), true)
          .batch;
  std::vector<int64_t> counts;
  for (int64_t n = 1; n <= batch; ++n)
    if (batch % n == 0) counts.push_back(n);
  return counts;
}

// --auto_layout: the search over layouts (and mesh shapes with
// --num_cores), printed as a ranked table with the chosen flags, or as JSON.
int run_auto_layout(const cli::Flags& flags, const MeshConfig& config, Model& model, bool json) {
  AutoLayoutOptions opt;
  opt.topology = config.sim->topology;
  opt.fixed = LayoutRules(flags.str("fixed_layout"));
  opt.memory_limit = flags.f64("memory_limit_gib") * double(1 << 30);
  opt.time_budget = flags.f64("time_budget");
  opt.max_dims = static_cast<int>(flags.i64("max_dims"));
  opt.simulate_top = static_cast<int>(flags.i64("simulate_top"));
  if (opt.simulate_top < 1) throw ValueError("--simulate_top must be at least 1");
  if (!json) std::printf("%s\n%s\n", opt.topology.to_string().c_str(), model.description.c_str());
  const int64_t num_cores = flags.i64("num_cores");
  TrainingStep step{{model.loss}, *model.train_ops, model.microbatches, {}};
  if (model.apply_ops) step.apply = *model.apply_ops;
  const AutoLayoutResult r = num_cores > 0
                                 ? auto_layout_and_mesh_shape(*model.graph, num_cores, step, opt)
                                 : auto_layout(*model.graph, config.mesh_shape, step, opt);
  const int rows = static_cast<int>(flags.i64("candidates"));
  if (json) {
    std::printf("%s\n", r.to_json(rows).c_str());
    return 0;
  }
  std::printf("%s", r.table(rows).c_str());
  std::printf("--mesh_shape \"%s\" --layout \"%s\"", r.mesh.to_string().c_str(),
              r.rules.to_string().c_str());
  if (model.microbatches > 1)
    std::printf(" --microbatches %lld", static_cast<long long>(model.microbatches));
  std::printf("\n");
  return 0;
}

// Every flag mtf-sim takes.
void define_flags(cli::Flags& flags) {
  flags.define("model", "mlp",
               "built-in model: mlp (the Fashion-MNIST MLP), transformer (the paper's LM), "
               "transformer_encdec (the sequence-to-sequence Transformer at the transformer "
               "flags' sizes: --layers in each stack, --length for sources and targets) or "
               "unet3d (a 3-D U-Net on volumes); synthetic data");
  flags.define("batch_size", "0", "mlp, unet3d: examples per step (0: 512 for mlp, 32 for unet3d)");
  flags.define("side", "256", "unet3d: voxels along each of d, h and w");
  flags.define("channels", "32", "unet3d: channels at the top level (doubling per level down)");
  flags.define("levels", "4", "unet3d: resolution levels");
  flags.define("hidden", "1024", "mlp: size of the hidden dimension");
  // The transformer's sizes default to the paper's smallest language model.
  models::define_transformer_flags(flags, models::TransformerConfig::paper(4096, 4), true);
  flags.define("decode", "false",
               "transformer: simulate one step of incremental decoding (a token per sequence, "
               "key/value caches) instead of a training step: its time is the latency per "
               "token");
  flags.define("decode_batch", "1", "with --decode: sequences decoded together");
  flags.define("microbatches", "1",
               "transformer, transformer_encdec: train each --batch as this many equal parts "
               "whose gradients "
               "accumulate, then one update run (the step's time sums its runs; its memory "
               "is the largest run's), or \"auto\": the fewest parts (a divisor of --batch) "
               "at which the step fits in memory (with --auto_layout: some layout fits)");
  flags.define("mesh_shape", "all:512", "logical mesh, e.g. \"batch:16;model:32\"");
  flags.define("layout", "batch:all", "layout rules, e.g. \"batch:batch;hidden:model\"");
  flags.define("topology", "tpu-v2-512",
               "machine preset: tpu-v2-{8,32,128,512}, tpu-v3-{8,32,128,512,2048}, "
               "tpu-v4-{4x4x4,8x8x8,16x16x16}, dgx-a100-N and dgx-h100-N (N nodes of 8 GPUs), "
               "host (this machine as --calibrate measured it; one device per rank of the "
               "mesh, as threads unless --topology_set host_ranks=processes)");
  flags.define("topology_set", "",
               "overrides, e.g. \"link_bandwidth=50e9,chips=8x8\" (keys: name network chips "
               "wraparound cores_per_chip core_flops core_flops.<dtype> core_memory "
               "chip_memory_bandwidth link_bandwidth link_latency core_link_bandwidth "
               "core_link_latency; switched: nodes devices_per_node node_fabric "
               "node_link_bandwidth node_link_latency nics_per_node nic_bandwidth "
               "network_latency nodes_per_leaf oversubscription; docs/simulator.md)");
  flags.define("calibrate", "",
               "measure this machine (executor overheads, matrix-product rate by size, "
               "elementwise bandwidth, latency and bandwidth between ranks as threads and as "
               "processes), write it as a machine file to this path and exit; --topology host "
               "reads it from $MTF_HOST_MACHINE or ~/.cache/mtf/host.machine");
  flags.define("calibration_rounds", "3",
               "with --calibrate: measure this many times and keep each figure's median "
               "(1 round takes about 20 s)");
  flags.define("from_calibrations", "",
               "with --calibrate: measure nothing; write the median of these machine files "
               "(comma-separated; calibrations taken at different times, e.g. spread through "
               "a validation run) as each round's figures are combined");
  flags.define("watch_speeds", "0",
               "measure nothing else: time a float32 and a bfloat16 product on every CPU at "
               "once, 4 times a second for this many seconds, say how the machine's speed moved "
               "(per CPU a fast and a slow level, the share of the time at the fast one, how long "
               "a level held, how often every CPU was fast at once) and exit: whether "
               "predictions can be checked against real runs on this machine");
  flags.define("topology_file", "",
               "file of `key = value` overrides, applied before --topology_set");
  flags.define("mapping", "",
               "physical core of each logical processor, comma-separated "
               "(default: automatic, axes as rings of neighbours)");
  flags.define("mode", "cost",
               "functional (real data on every core) or cost (shapes and clocks only)");
  flags.define("steps", "1", "training steps to simulate");
  flags.define("ring_timing", "true",
               "time each ring collective and recursive doubling at once when all its cores "
               "reach it (false: message by message, slower; for comparison)");
  flags.define("trace", "", "write a Chrome trace-event JSON of the last step (opens in Perfetto)");
  flags.define("json", "false", "print the report (with --auto_layout: the search's) as JSON");
  flags.define("explain", "false",
               "also print how the layout splits the model: a picture of every variable's, "
               "input's and fetch's blocks over the mesh, and each op's collectives with their "
               "bytes and simulated time");
  flags.define("explain_blocks", "8", "with --explain: blocks shown per tensor axis");
  flags.define("ops", "12", "rows of the per-op table");
  flags.define("auto_layout", "false",
               "choose the layout (and with --num_cores the mesh shape) by predicted step time "
               "and print the ranked candidates instead of simulating --layout");
  flags.define("num_cores", "0",
               "with --auto_layout: also search mesh shapes of this many cores (1-3 dimensions)");
  flags.define("max_dims", "3",
               "with --auto_layout and --num_cores: mesh shapes of at most this many dimensions");
  flags.define("fixed_layout", "", "with --auto_layout: rules kept as given");
  flags.define("memory_limit_gib", "0", "with --auto_layout: memory per core (0: the topology's)");
  flags.define("time_budget", "30", "with --auto_layout: seconds for the search");
  flags.define("candidates", "10", "with --auto_layout: rows of the ranked table");
  flags.define("simulate_top", "3",
               "with --auto_layout: simulate up to this many of the best estimates to verify "
               "the leader (more: slower, surer where the estimates are close)");
}

// The simulated mesh: shape, layout, machine and how to run it.
MeshConfig sim_config_from_flags(const cli::Flags& flags, const std::string& mode) {
  MeshConfig config;
  config.mesh_shape = MeshShape(flags.str("mesh_shape"));
  config.layout = LayoutRules(flags.str("layout"));
  config.impl = MeshImpl::kSimulated;
  config.sim->topology = Topology::preset(flags.str("topology"));
  if (!flags.str("topology_file").empty())
    config.sim->topology.load_file(flags.str("topology_file"));
  // A host's devices are the mesh's ranks.
  if (config.sim->topology.host_cpus > 0)
    config.sim->topology.devices_per_node = static_cast<int>(config.mesh_shape.size());
  config.sim->topology.apply_overrides(flags.str("topology_set"));
  config.sim->mode = mode == "functional" ? SimMode::kFunctional : SimMode::kCostOnly;
  config.sim->physical_order = parse_mapping(flags.str("mapping"));
  config.sim->ring_timing = flags.boolean("ring_timing");
  config.sim->trace_path = flags.str("trace");  // each step rewrites it: the last one stays

  return config;
}

// Runs --steps steps of the model on the simulated machine and prints the
// report (table or JSON), with --explain's picture first.
// A step with gradient accumulation is its microbatches' runs and the
// update run, reported as one (SimReport::followed_by).
void simulate(const cli::Flags& flags, const MeshConfig& config, Model& model, int64_t steps,
              bool json) {
  cli::check_layout_dimensions(config, *model.graph);
  Session session(*model.graph, config);
  const auto start = std::chrono::steady_clock::now();
  SimReport report;
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t part = 0; part < model.microbatches; ++part) {
      Feeds feeds;
      if (config.sim->mode == SimMode::kFunctional)
        feeds = model.feeds(static_cast<uint64_t>(step * model.microbatches + part));
      session.run({model.loss}, feeds, *model.train_ops);
      report =
          part == 0 ? session.simulation_report() : report.followed_by(session.simulation_report());
    }
    if (model.apply_ops) {
      session.run({}, {}, *model.apply_ops);
      report = report.followed_by(session.simulation_report());
    }
    progress(step + 1, steps,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!json) {
    std::printf("%s\n%s\n", config.sim->topology.to_string().c_str(), model.description.c_str());
  }
  if (flags.boolean("explain") && !json) {
    std::printf("%s\n", session
                            .explain({model.loss}, *model.train_ops,
                                     static_cast<int>(flags.i64("explain_blocks")))
                            .c_str());
  }
  if (json) {
    std::printf("%s\n", report.to_json().c_str());
  } else {
    std::printf("%s", report.to_table(static_cast<int>(flags.i64("ops"))).c_str());
    std::printf("simulated %lld step(s) in %.2f s of wall time\n", static_cast<long long>(steps),
                wall);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (tools::is_calibration_rank(argc, argv)) return tools::calibration_rank(argc, argv);
  try {
    cli::Flags flags;
    define_flags(flags);
    if (!flags.parse(argc, argv)) return 0;

    if (flags.f64("watch_speeds") != 0) {
      std::printf(
          "%s", tools::speed_states_report(tools::watch_speeds(flags.f64("watch_speeds"))).c_str());
      return 0;
    }
    if (!flags.str("calibrate").empty()) {
      const std::string path = flags.str("calibrate");
      if (!flags.str("from_calibrations").empty()) {
        std::string steadiness;
        const Topology machine = combined_calibrations(flags.str("from_calibrations"), &steadiness);
        write_machine_file(path, machine);
        std::printf("%s%s\nwrote %s\n", steadiness.c_str(), machine.to_string().c_str(),
                    path.c_str());
        return 0;
      }
      const tools::Calibration cal =
          tools::calibrate_host(isatty(STDERR_FILENO), calibration_rounds(flags));
      write_machine_file(path, cal.machine);
      std::printf("%swrote %s\n", cal.report().c_str(), path.c_str());
      return 0;
    }

    const std::string mode = flags.str("mode");
    if (mode != "functional" && mode != "cost")
      throw ValueError("--mode must be functional or cost, not \"" + mode + "\"");
    const bool json = flags.boolean("json");
    const int64_t steps = flags.i64("steps");
    if (steps < 1) throw ValueError("--steps must be at least 1");
    const bool auto_layout_flag = flags.boolean("auto_layout");

    const MeshConfig config = sim_config_from_flags(flags, mode);
    const std::vector<int64_t> counts = microbatch_counts(flags);
    for (size_t i = 0;; ++i) {
      try {
        Model model = make_model(flags.str("model"), flags, counts[i]);
        if (auto_layout_flag) return run_auto_layout(flags, config, model, json);
        simulate(flags, config, model, steps, json);
        return 0;
      } catch (const Error& e) {
        // --microbatches auto: on to more parts while these do not fit
        // (or do not divide over the layout's mesh dimension).
        const bool next = dynamic_cast<const OutOfMemoryError*>(&e) ||
                          (dynamic_cast<const LayoutError*>(&e) && !auto_layout_flag);
        if (i + 1 == counts.size() || !next) throw;
        std::fprintf(json ? stderr : stdout, "--microbatches %lld: %s\n",
                     static_cast<long long>(counts[i]), e.what());
      }
    }
  } catch (const mtf::Error& e) {
    std::fprintf(stderr, "mtf-sim: %s\n", e.what());
    return 1;
  }
}
