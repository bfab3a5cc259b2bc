#include "cli/checkpoint_flags.h"

#include <string>

#include "mtf/errors.h"

namespace mtf::cli {

void define_checkpoint_flags(Flags& flags, int64_t save_every) {
  flags.define("checkpoint_dir", "",
               "save checkpoints here and resume from the latest one found (any mesh/layout)");
  flags.define("save_every", std::to_string(save_every),
               "with --checkpoint_dir: save every this many steps (and at the last)");
  flags.define("keep", "3", "with --checkpoint_dir: checkpoints to keep");
}

std::unique_ptr<CheckpointManager> checkpoints_from_flags(const Flags& flags, int64_t* save_every) {
  *save_every = flags.i64("save_every");
  if (*save_every < 1) throw ValueError("--save_every must be >= 1");
  const int64_t keep = flags.i64("keep");
  if (keep < 1) throw ValueError("--keep must be >= 1");
  const std::string dir = flags.str("checkpoint_dir");
  if (dir.empty()) return nullptr;
  return std::make_unique<CheckpointManager>(dir, static_cast<int>(keep));
}

}  // namespace mtf::cli
