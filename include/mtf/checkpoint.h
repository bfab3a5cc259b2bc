// mtf/checkpoint.h — checkpoints in HDF5 that restore into any mesh, layout
// or mesh implementation, and a directory manager that never loses one.
//
// A checkpoint file holds every variable of a Session as its full logical
// tensor (so h5py's f["w1"][...] is a plain array of the right shape), with
// its dimension names and dtype as attributes, plus the step, the run
// counter (which keys random ops), the mesh shape and layout rules it was
// saved from, a format version and user metadata (e.g. a data position).
// Optimizer state is saved because optimizer slots are variables. Each
// distinct slice is written once, straight from the processors' slices, and
// carries a CRC-32C checked on restore; HDF5's own metadata checksums (latest
// file format) guard the rest. In a multi-process job every rank writes the
// slices it owns into its own part file at the same time, and the checkpoint
// file joins them with HDF5 virtual datasets (h5py still reads full tensors);
// the part files sit beside it and go wherever it goes (CheckpointInfo::files).
// The format is in docs/checkpoints.md.
//
// Errors: IoError for files that cannot be read or written, are truncated,
// corrupted or not mtf checkpoints; ValueError for a missing variable;
// ShapeError for a shape or dimension-name mismatch (naming the variable and
// both shapes); DTypeError for a dtype mismatch. A failed restore leaves
// every variable as it was; a failed save leaves no file behind.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mtf/session.h"

namespace mtf {

struct CheckpointInfo {
  std::string path;
  int64_t step = 0;
  uint64_t run_counter = 0;
  std::string mesh_shape, layout;  // where it was saved from
  int format_version = 0;
  std::map<std::string, std::string> metadata;  // user key-value pairs
  std::vector<std::string> variables;           // names, in file order
  // Every file of the checkpoint: `path`, then its part files (same
  // directory) when a multi-process job wrote it in parts.
  std::vector<std::string> files;
};

struct SaveOptions {
  // How a multi-process job writes (a single process always writes one file):
  // kPerRank: each rank writes its own part file, all at the same time, and
  //   rank 0 writes the checkpoint file, whose virtual datasets read from the
  //   parts; kOneFile: the ranks write into one file in turn (slower; the
  //   result is a single self-contained file).
  enum class Files { kPerRank, kOneFile };
  Files files = Files::kPerRank;
  // Variables not saved: state the program rebuilds, such as decoding
  // caches (restore the others with RestoreOptions::only).
  std::vector<std::string> skip;
};

struct RestoreOptions {
  // Variable name in the session -> name in the checkpoint, for variables
  // stored under another name (e.g. initialising one model from another's
  // checkpoint). Unlisted variables use their own name.
  std::map<std::string, std::string> rename;
  // Restore only these session variables (empty: all of them).
  std::vector<std::string> only;
  // Variables the checkpoint lacks keep their values instead of failing.
  bool allow_missing = false;
  // Also set the session's run counter from the checkpoint.
  bool restore_run_counter = true;
};

// Writes `session`'s variables to `path` atomically: to a temporary name in
// the same directory, flushed to disk, then renamed over `path` (part files,
// if any, are complete and flushed before that rename; those of a checkpoint
// it replaces are removed after it).
void save_checkpoint(Session& session, const std::string& path, int64_t step,
                     const std::map<std::string, std::string>& metadata = {},
                     const SaveOptions& options = {});
// Reads the header (no tensor data); validates that it is an mtf checkpoint.
CheckpointInfo read_checkpoint_info(const std::string& path);
// Restores variables (and the run counter) into `session`, whatever its mesh,
// layout or implementation, bit for bit. Returns the checkpoint's header.
CheckpointInfo restore_checkpoint(Session& session, const std::string& path,
                                  const RestoreOptions& options = {});
// One variable as a whole host tensor, checksums verified.
HostTensor read_checkpoint_variable(const std::string& path, const std::string& name);

// A directory of checkpoints `ckpt-<step>.h5` with a `latest` pointer file,
// keeping the newest `keep`. Saves are atomic (temporary file, fsync,
// rename, then the pointer is replaced the same way), so a crash at any
// moment leaves the previous checkpoint whole and findable; temporary files
// and part files no checkpoint lists are never taken for checkpoints and are
// removed by the next save; pruning removes a checkpoint with its parts.
//
// A save at step s removes the checkpoints of later steps: they are of a run
// that went on past s before this one resumed from an older checkpoint, and
// kept they would be taken for this run's future (by pruning, and by the
// fallback to an older checkpoint). Each removal is said on stderr.
class CheckpointManager {
 public:
  explicit CheckpointManager(std::string directory, int keep = 3, SaveOptions options = {});

  // Returns the path written.
  std::string save(Session& session, int64_t step,
                   const std::map<std::string, std::string>& metadata = {});
  // The checkpoint the pointer names (or, when there is no pointer, the
  // newest `ckpt-*.h5`); nullopt when there is none. A pointer naming a
  // missing file: the newest present, said on stderr, or IoError when there
  // is none (never a silent fresh start).
  std::optional<std::string> latest_path() const;
  // The newest checkpoint that passes its checks (header, seal, part
  // files: read_checkpoint_info): latest_path(), or when that fails them,
  // the next older one that passes, saying on stderr which failed and why.
  // nullopt when there is none; IoError naming each when every one fails.
  std::optional<std::string> latest_valid_path() const;
  // Restores the newest checkpoint that restores (its checks, and every
  // block's checksum as it is read), going to older ones as
  // latest_valid_path() does; nullopt when the directory has none. A failed
  // attempt changes no variable.
  std::optional<CheckpointInfo> restore_latest(Session& session,
                                               const RestoreOptions& options = {}) const;
  // Creates the directory if need be and writes and removes a small file
  // in it: IoError naming the directory and the reason when it cannot be
  // written (read-only, not a directory, no permission), so that a training
  // run learns it before its first step rather than at its first save.
  void check_writable() const;
  // Steps of the checkpoints present, ascending.
  std::vector<int64_t> steps() const;
  // The checkpoint of `step` (to resume from a chosen one rather than the
  // newest); IoError naming the directory and the steps present when there
  // is none.
  std::string path_of_step(int64_t step) const;
  const std::string& directory() const { return dir_; }
  // The options of later saves (e.g. variables to skip, known only once
  // the model is built).
  void set_save_options(SaveOptions options) { options_ = std::move(options); }

  // Keep the best checkpoint by `metric` beside the newest `keep`: a save
  // whose metadata holds `metric` (a number) and betters every earlier one
  // (lower, or higher when higher_is_better) becomes the best; the file
  // "best" in the directory names it with its value, and it is not removed
  // until a better one replaces it. Saves without the metric never become
  // the best. ValueError for an empty metric name.
  void set_keep_best(std::string metric, bool higher_is_better);
  // The best checkpoint and its metric value, or nullopt (none recorded,
  // or its file is gone).
  std::optional<std::pair<std::string, double>> best() const;

 private:
  std::string dir_;
  int keep_;
  SaveOptions options_;
  std::string best_metric_;
  bool higher_is_better_ = false;
  std::vector<std::pair<int64_t, std::string>> files() const;
  // files(), or none when the directory does not exist (yet).
  std::vector<std::pair<int64_t, std::string>> files_if_any() const;
  // Removes the checkpoints of steps after `step`, saying so.
  void remove_later_than(int64_t step) const;
  // latest_path(), then the older checkpoints, newest first.
  std::vector<std::string> candidates() const;
  // The first candidate `attempt` accepts (it throws IoError to refuse);
  // the refusals said on stderr, and IoError listing them all when none
  // is accepted.
  template <typename Attempt>
  auto first_accepted(Attempt attempt) const -> std::optional<decltype(attempt(std::string()))>;
  // The keep_best metric's value in `metadata` (NaN: none; ValueError when
  // it is not a number).
  double metric_of(const std::map<std::string, std::string>& metadata) const;
  // Rank 0 after a save: updates "best" when `metric` betters it; the
  // best checkpoint's file name ("" for none).
  std::string record_if_best(int64_t step, double metric);
};

}  // namespace mtf
