// checkpoint_flags.h — the flags the training examples share to save
// checkpoints and resume: --checkpoint_dir, --save_every, --keep. Bad
// values are ValueErrors naming the flag.
#pragma once

#include <cstdint>
#include <memory>

#include "cli/flags.h"
#include "mtf/checkpoint.h"

namespace mtf::cli {

// Declares the three flags; `save_every` is --save_every's default.
void define_checkpoint_flags(Flags& flags, int64_t save_every);

// The manager --checkpoint_dir asks for (nullptr without one);
// *save_every receives --save_every (ValueError below 1).
std::unique_ptr<CheckpointManager> checkpoints_from_flags(const Flags& flags, int64_t* save_every);

}  // namespace mtf::cli
