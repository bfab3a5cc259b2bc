// checkpoint_flags.h — the flags the training examples share to save
// checkpoints and resume: --checkpoint_dir, --save_every, --keep, and
// --keep_best where the example evaluates as it trains, and --restore_step /
// --restore_file to resume from a chosen checkpoint rather than the newest. Bad values are
// ValueErrors naming the flag.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cli/flags.h"
#include "mtf/checkpoint.h"

namespace mtf::cli {

// Declares the flags; `save_every` is --save_every's default.
// `best_metric` (what the example evaluates, e.g. "held-out loss"): also
// --keep_best.
void define_checkpoint_flags(Flags& flags, int64_t save_every, const char* best_metric = nullptr);

// The manager --checkpoint_dir asks for (nullptr without one);
// *save_every receives --save_every (ValueError below 1).
std::unique_ptr<CheckpointManager> checkpoints_from_flags(const Flags& flags, int64_t* save_every);

// The checkpoint --restore_step or --restore_file chooses, checked
// (read_checkpoint_info: a damaged choice is an IoError, never a fallback
// to another); nullopt when neither is given (resume from the newest valid
// one). ValueError for both at once, a negative step, or either without
// --checkpoint_dir (`checkpoints` null). When the chosen step is older than
// the newest present, says on stderr that the first save removes the later
// ones (CheckpointManager::save).
std::optional<std::string> chosen_checkpoint(const Flags& flags,
                                             const CheckpointManager* checkpoints);

// With --keep_best: has `checkpoints` keep the best by the metadata entry
// `metric` (CheckpointManager::set_keep_best), which the example writes
// into every checkpoint saved at an evaluation step; ValueError without
// --checkpoint_dir, or when --save_every is not a multiple of `eval_every`
// (then some checkpoints would have no evaluation). Returns --keep_best.
bool keep_best_from_flags(const Flags& flags, CheckpointManager* checkpoints, int64_t save_every,
                          int64_t eval_every, const std::string& metric, bool higher_is_better);

}  // namespace mtf::cli
