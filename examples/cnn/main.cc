// examples/cnn: trains a convolutional network (models/cnn.h) on
// Fashion-MNIST and reports test accuracy over the 10,000 test images. By
// default the images' rows are split over two processors ("h:rows"): every
// convolution and pooling exchanges halo rows with its neighbour instead of
// gathering the image. --layout "batch:rows" is data parallelism, and
// "batch:rows;h:cols" on a rows:2;cols:2 mesh both at once.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/dtype_flags.h"
#include "cli/example_main.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "models/cnn.h"
#include "models/mlp.h"

int main(int argc, char** argv) {
  using namespace mtf;
  return mtf::cli::run_example("cnn", [&]() -> int {
    cli::Flags flags;
    flags.define("data_dir", "/usr/share/datasets/fashion-mnist", "directory of the IDX files");
    flags.define("steps", "2000", "training steps");
    flags.define("batch_size", "100", "examples per step");
    flags.define("lr", "0.002",
                 "Adam learning rate: a number or a schedule, e.g. \"0.002*cosine(2000)\" "
                 "(docs/training.md)");
    flags.define("seed", "1", "seed for initialisation and data order");
    flags.define("eval_every", "200", "print the mean training loss every this many steps");
    cli::define_mesh_flags(flags);
    flags.define("mesh_shape", "rows:2", "mesh of processors, e.g. \"rows:2;cols:2\" (empty: one)");
    flags.define("layout", "h:rows",
                 "layout rules, e.g. \"h:rows\" (spatial), \"batch:rows\" (data), or auto");
    flags.define("loss_digits", "6", "significant digits of printed losses (17: exact)");
    flags.define("print_counters", "false",
                 "print the training step's program counters (flops, bytes per collective)");
    cli::define_dtype_flags(flags);
    if (!flags.parse(argc, argv)) return 0;

    models::CnnConfig config;
    config.variable_dtype = cli::variable_dtype_from_flags(flags);
    config.batch_size = flags.i64("batch_size");
    config.learning_rate = LearningRate(flags.str("lr"));
    config.seed = static_cast<uint64_t>(flags.i64("seed"));
    const int64_t steps = flags.i64("steps");
    const int64_t eval_every = std::max<int64_t>(1, flags.i64("eval_every"));
    const int loss_digits = static_cast<int>(std::clamp<int64_t>(flags.i64("loss_digits"), 1, 17));
    if (steps < 0) throw ValueError("--steps must be >= 0");
    const bool print_counters = flags.boolean("print_counters");

    const std::string dir = flags.str("data_dir");
    models::Dataset train = models::load_mnist_split(dir, "train");
    models::Dataset test = models::load_mnist_split(dir, "t10k");
    std::printf("data: %lld training and %lld test images from %s\n",
                static_cast<long long>(train.images.count),
                static_cast<long long>(test.images.count), dir.c_str());

    std::string transport_name;
    MeshConfig mesh = cli::mesh_config_from_flags(flags, &transport_name);
    models::Cnn cnn(config);
    cli::resolve_auto_layout(flags, mesh, cnn.graph(), {{cnn.loss}, cnn.train_ops});
    Session session(cnn.graph(), mesh);
    std::printf("%s\n", cli::describe_mesh(mesh, transport_name).c_str());
    // Lowering the training step checks every tensor's layout before training.
    const std::string step_counters = session.counters_text({cnn.loss}, cnn.train_ops);
    cnn.check_evaluation(session);  // and the evaluation's, before training
    cli::check_layout_dimensions(mesh, cnn.graph());
    if (print_counters) std::printf("training step counters:\n%s", step_counters.c_str());

    models::BatchSampler sampler(train.images.count, config.batch_size, config.seed);
    double interval_loss = 0;
    int64_t interval_steps = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= steps; ++step) {
      const std::vector<int64_t> idx = sampler.next();
      // Each process reads only the examples, rows and columns its processors hold.
      const float loss = cnn.train_step(session, train, idx);
      if (step == 1 && mesh.process_transport) {
        const int64_t whole = config.batch_size * (models::Cnn::kSide * models::Cnn::kSide * 4 + 4);
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
      if (step == 1) session.reset_profile();  // the first step warms caches up
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("trained %lld steps in %.1f s (%.2f ms/step)\n", static_cast<long long>(steps),
                secs, steps ? 1000.0 * secs / static_cast<double>(steps) : 0.0);
    if (mesh.profile) std::printf("%s", session.profile().to_string().c_str());
    std::printf("test accuracy: %.4f over %lld images\n", cnn.accuracy(session, test),
                static_cast<long long>(test.images.count));
    return 0;
  });
}
