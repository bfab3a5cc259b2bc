// examples/mnist: trains the MLP of Mesh TensorFlow's README on
// Fashion-MNIST and reports test accuracy over the 10,000 test images.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/checkpoint_flags.h"
#include "cli/dtype_flags.h"
#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "cli/training_report.h"
#include "models/mlp.h"

namespace {

// The example's flags, with their defaults and help.
void define_flags(mtf::cli::Flags& flags) {
  using namespace mtf;
  flags.define("data_dir", "/usr/share/datasets/fashion-mnist", "directory of the IDX files");
  flags.define("steps", "3000", "training steps");
  flags.define("batch_size", "100", "examples per step");
  flags.define("hidden", "1024", "size of the hidden dimension");
  flags.define("lr", "0.2",
               "SGD learning rate: a number or a schedule, e.g. \"0.2*linear_decay(100, 400)\" "
               "(docs/training.md)");
  flags.define("seed", "1", "seed for initialisation and data order");
  flags.define("eval_every", "500", "print the mean training loss every this many steps");
  // Reproducible by default: the example shows that layouts do not change
  // the loss trajectory, to the bit (--reproducible false: BLAS speed).
  cli::define_mesh_flags(flags, /*reproducible=*/true);
  cli::define_checkpoint_flags(flags, /*save_every=*/500);
  cli::define_dtype_flags(flags);
  cli::define_report_flags(flags);
  flags.define("loss_digits", "6", "significant digits of printed losses (17: exact)");
  flags.define("print_counters", "false",
               "print the training step's program counters (flops, bytes per collective)");
}

// Where training stands: the first step to run, and the loss accumulated
// since the last print.
struct Position {
  double interval_loss = 0;
  int64_t interval_steps = 0;
  int64_t first_step = 1;
};

// With --checkpoint_dir: checks it can be written, then restores the
// chosen checkpoint (--restore_step / --restore_file) or the newest valid
// one — weights, optimizer state, run counter and data position — so that
// the run goes on as if never stopped. A fresh start without one.
Position resume(mtf::Session& session, mtf::CheckpointManager* checkpoints,
                const std::optional<std::string>& chosen, mtf::models::BatchSampler& sampler) {
  using namespace mtf;
  Position p;
  if (!checkpoints) return p;
  checkpoints->check_writable();  // before training, not at the first save
  const std::optional<CheckpointInfo> info =
      chosen ? std::optional(restore_checkpoint(session, *chosen))
             : checkpoints->restore_latest(session);
  if (!info) return p;
  auto meta = [&](const char* key) {
    auto it = info->metadata.find(key);
    if (it == info->metadata.end()) {
      throw ValueError("checkpoint " + info->path + " has no \"" + key +
                       "\" entry: it was not written by this example; use another "
                       "--checkpoint_dir");
    }
    return it->second;
  };
  sampler.restore(meta("sampler"));
  p.interval_loss = std::stod(meta("interval_loss"));
  p.interval_steps = std::stoll(meta("interval_steps"));
  p.first_step = info->step + 1;
  std::printf("resumed from %s at step %lld (saved on mesh \"%s\", layout \"%s\")\n",
              info->path.c_str(), static_cast<long long>(info->step), info->mesh_shape.c_str(),
              info->layout.c_str());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mtf;
  return mtf::cli::run_example("mnist", [&]() -> int {
    cli::Flags flags;
    define_flags(flags);
    if (!flags.parse(argc, argv)) return 0;

    models::MlpConfig config;
    config.batch_size = flags.i64("batch_size");
    config.hidden = flags.i64("hidden");
    config.learning_rate = LearningRate(flags.str("lr"));
    config.seed = static_cast<uint64_t>(flags.i64("seed"));
    config.variable_dtype = cli::variable_dtype_from_flags(flags);
    const int64_t steps = flags.i64("steps");
    const int64_t eval_every = std::max<int64_t>(1, flags.i64("eval_every"));
    const int loss_digits = static_cast<int>(std::clamp<int64_t>(flags.i64("loss_digits"), 1, 17));
    if (steps < 0) throw ValueError("--steps must be >= 0");

    const std::string dir = flags.str("data_dir");
    models::Dataset train = models::load_mnist_split(dir, "train");
    models::Dataset test = models::load_mnist_split(dir, "t10k");
    std::printf("data: %lld training and %lld test images from %s\n",
                static_cast<long long>(train.images.count),
                static_cast<long long>(test.images.count), dir.c_str());

    std::string transport_name;
    MeshConfig mesh = cli::mesh_config_from_flags(flags, &transport_name);
    const bool print_counters = flags.boolean("print_counters");

    models::Mlp mlp(config);
    cli::resolve_auto_layout(flags, mesh, mlp.graph(), {{mlp.loss}, mlp.train_ops});
    Session session(mlp.graph(), mesh);
    std::printf("%s\n", cli::describe_mesh(mesh, transport_name).c_str());
    // Lowering the training step checks every tensor's layout before training.
    const std::string step_counters = session.counters_text({mlp.loss}, mlp.train_ops);
    mlp.check_evaluation(session);  // and the evaluation's, before training
    cli::check_layout_dimensions(mesh, mlp.graph());
    if (print_counters) std::printf("training step counters:\n%s", step_counters.c_str());
    models::BatchSampler sampler(train.images.count, config.batch_size, config.seed);
    int64_t save_every = 0;
    const std::unique_ptr<CheckpointManager> checkpoints =
        cli::checkpoints_from_flags(flags, &save_every);
    const std::optional<std::string> chosen = cli::chosen_checkpoint(flags, checkpoints.get());
    const Position resumed = resume(session, checkpoints.get(), chosen, sampler);
    double interval_loss = resumed.interval_loss;
    int64_t interval_steps = resumed.interval_steps;
    const int64_t first_step = resumed.first_step;
    auto save = [&](int64_t step) {
      char loss[64];
      std::snprintf(loss, sizeof(loss), "%.17g", interval_loss);
      checkpoints->save(session, step,
                        {{"sampler", sampler.state()},
                         {"interval_loss", loss},
                         {"interval_steps", std::to_string(interval_steps)}});
    };
    cli::TrainingReport report(flags, mesh, "examples", steps);
    report.set_flops_per_step(session.flops_per_run({mlp.loss}, mlp.train_ops));
    if (report.writes_summaries()) std::printf("%s\n", report.describe().c_str());
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = first_step; step <= steps; ++step) {
      std::vector<int64_t> idx = sampler.next();
      // Each process reads only the examples its processors hold.
      const auto t0 = std::chrono::steady_clock::now();
      float loss = mlp.train_step(session, train, idx);
      report.step(step,
                  {loss, config.learning_rate.at(step), NAN,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                   static_cast<double>(config.batch_size)});
      if (step == first_step && mesh.process_transport) {
        const int64_t whole = config.batch_size * (mlp.rows_dim.size * mlp.cols_dim.size * 4 + 4);
        std::printf("input: this process read %lld of the batch's %lld bytes per step\n",
                    static_cast<long long>(session.last_fed_bytes()),
                    static_cast<long long>(whole));
      }
      interval_loss += loss;
      ++interval_steps;
      if (step == 1 || step % eval_every == 0 || step == steps) {
        std::printf("step %lld loss %.*g\n", static_cast<long long>(step), loss_digits,
                    interval_loss / static_cast<double>(interval_steps));
        std::fflush(stdout);
        interval_loss = 0;
        interval_steps = 0;
      }
      if (checkpoints && (step % save_every == 0 || step == steps)) save(step);
      if (step == first_step) session.reset_profile();  // the first step warms caches up
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int64_t trained = std::max<int64_t>(0, steps - first_step + 1);
    std::printf("trained %lld steps in %.1f s (%.2f ms/step)\n", static_cast<long long>(trained),
                secs, trained ? 1000.0 * secs / static_cast<double>(trained) : 0.0);
    if (mesh.profile) std::printf("%s", session.profile().to_string().c_str());
    std::printf("test accuracy: %.4f over %lld images\n", mlp.accuracy(session, test),
                static_cast<long long>(test.images.count));
    return 0;
  });
}
