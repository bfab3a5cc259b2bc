// Fuzzes the command-line parser as the examples set it up (mesh,
// checkpoint and dtype flags): each input line is one argument. Whatever
// parses is then read the way the examples read it — every flag as text,
// integer, number and boolean, the mesh configuration, the checkpoint
// choice, the dtypes — and only mtf's errors may come out.
#include <memory>

#include "cli/checkpoint_flags.h"
#include "cli/dtype_flags.h"
#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtf;
  std::vector<std::string> args = fuzz::fields(fuzz::text(data, size), '\n');
  if (args.size() > 64) return 0;
  args.insert(args.begin(), "fuzz_flags");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  cli::Flags flags;
  cli::define_mesh_flags(flags);
  cli::define_checkpoint_flags(flags, 100, "loss");
  cli::define_dtype_flags(flags);
  flags.define("steps", "10", "steps");
  flags.define("lr", "0.1", "learning rate");
  fuzz::expect_only_mtf_errors([&] {
    for (const std::string& a : args)  // --help prints the usage: not what is fuzzed here
      if (a == "--help" || a == "-h" || a == "-help") return;
    if (!flags.parse(static_cast<int>(args.size()), argv.data())) return;
    for (const char* name : {"steps", "lr", "mesh_shape", "layout", "keep", "save_every"}) {
      fuzz::expect_only_mtf_errors([&] { flags.i64(name); });
      fuzz::expect_only_mtf_errors([&] { flags.f64(name); });
      fuzz::expect_only_mtf_errors([&] { flags.boolean(name); });
    }
    fuzz::expect_only_mtf_errors([&] { cli::variable_dtype_from_flags(flags); });
    int64_t save_every = 0;
    std::unique_ptr<CheckpointManager> checkpoints;
    fuzz::expect_only_mtf_errors(
        [&] { checkpoints = cli::checkpoints_from_flags(flags, &save_every); });
    if (!checkpoints) fuzz::expect_only_mtf_errors([&] { cli::chosen_checkpoint(flags, nullptr); });
    // A transport would connect: only "none" (and "auto" with no launcher).
    const std::string transport = flags.str("transport");
    if (transport == "none" || transport == "auto") {
      std::string name;
      const MeshConfig mesh = cli::mesh_config_from_flags(flags, &name);
      cli::describe_mesh(mesh, name);
    }
  });
  return 0;
}
