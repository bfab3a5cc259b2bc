#include "cli/checkpoint_flags.h"

#include <cstdio>
#include <string>
#include <vector>

#include "mtf/errors.h"

namespace mtf::cli {

void define_checkpoint_flags(Flags& flags, int64_t save_every, const char* best_metric) {
  flags.define("checkpoint_dir", "",
               "save checkpoints here and resume from the latest one found (any mesh/layout)");
  flags.define("save_every", std::to_string(save_every),
               "with --checkpoint_dir: save every this many steps (and at the last)");
  flags.define("keep", "3", "with --checkpoint_dir: checkpoints to keep");
  flags.define("restore_step", "-1",
               "with --checkpoint_dir: resume from the checkpoint of this step rather than the "
               "newest (the first save then removes those of later steps)");
  flags.define("restore_file", "",
               "with --checkpoint_dir: resume from this checkpoint file rather than the newest");
  if (best_metric) {
    flags.define("keep_best", "false",
                 std::string("with --checkpoint_dir: also keep the checkpoint of the best ") +
                     best_metric + " (its name is in the file \"best\")");
  }
}

bool keep_best_from_flags(const Flags& flags, CheckpointManager* checkpoints, int64_t save_every,
                          int64_t eval_every, const std::string& metric, bool higher_is_better) {
  if (!flags.boolean("keep_best")) return false;
  if (!checkpoints) throw ValueError("--keep_best needs --checkpoint_dir");
  if (save_every % eval_every != 0) {
    throw ValueError("--keep_best needs every checkpoint evaluated: make --save_every (" +
                     std::to_string(save_every) + ") a multiple of --eval_every (" +
                     std::to_string(eval_every) + ")");
  }
  checkpoints->set_keep_best(metric, higher_is_better);
  return true;
}

std::optional<std::string> chosen_checkpoint(const Flags& flags,
                                             const CheckpointManager* checkpoints) {
  const int64_t step = flags.i64("restore_step");
  const std::string file = flags.str("restore_file");
  if (step < -1) throw ValueError("--restore_step must be a step (>= 0)");
  if (step < 0 && file.empty()) return std::nullopt;
  if (step >= 0 && !file.empty())
    throw ValueError("give --restore_step or --restore_file, not both");
  const char* flag = step >= 0 ? "--restore_step" : "--restore_file";
  if (!checkpoints) {
    throw ValueError(std::string(flag) +
                     " needs --checkpoint_dir (where the resumed run saves its checkpoints)");
  }
  const std::string path = step >= 0 ? checkpoints->path_of_step(step) : file;
  const CheckpointInfo info = read_checkpoint_info(path);  // IoError: damaged or not one
  const std::vector<int64_t> steps = checkpoints->steps();
  if (!steps.empty() && steps.back() > info.step) {
    std::fprintf(stderr,
                 "mtf: %s: resuming from step %lld while \"%s\" holds checkpoints up to step "
                 "%lld; the first save removes those after step %lld (copy them elsewhere to "
                 "keep them)\n",
                 flag, static_cast<long long>(info.step), checkpoints->directory().c_str(),
                 static_cast<long long>(steps.back()), static_cast<long long>(info.step));
  }
  return path;
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
