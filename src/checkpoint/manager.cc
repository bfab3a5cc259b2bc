// CheckpointManager: a directory of checkpoints with an atomic "latest"
// pointer and the newest K kept.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "checkpoint/files.h"
#include "checkpoint/parts.h"
#include "collectives/tags.h"
#include "mtf/checkpoint.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".h5";
constexpr const char* kPointer = "latest";
constexpr const char* kBest = "best";

// The step of a checkpoint file name "ckpt-<digits>.h5", or -1.
int64_t step_of(const std::string& name) {
  const std::string prefix = kPrefix, suffix = kSuffix;
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return -1;
  return std::stoll(digits);
}

std::string file_name(int64_t step) { return kPrefix + std::to_string(step) + kSuffix; }

// The "best" file's checkpoint name and value ("ckpt-400.h5 2.731..."), or
// nullopt when it is missing or unreadable.
std::optional<std::pair<std::string, double>> read_best(const std::string& dir) {
  const std::string path = dir + "/" + kBest;
  if (!checkpoint::file_exists(path)) return std::nullopt;
  const std::string text = checkpoint::read_small_file(path);
  const size_t space = text.find(' ');
  if (space == std::string::npos || step_of(text.substr(0, space)) < 0) return std::nullopt;
  try {
    return std::make_pair(text.substr(0, space), std::stod(text.substr(space + 1)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

CheckpointManager::CheckpointManager(std::string directory, int keep, SaveOptions options)
    : dir_(std::move(directory)), keep_(keep), options_(options) {
  if (dir_.empty()) throw ValueError("CheckpointManager: the directory name is empty");
  if (keep_ < 1) throw ValueError("CheckpointManager: keep must be at least 1");
}

// The checkpoint files present as (step, name), ascending by step; a name
// such as "ckpt-040.h5" is kept as it is.
std::vector<std::pair<int64_t, std::string>> CheckpointManager::files() const {
  std::vector<std::pair<int64_t, std::string>> files;
  for (const std::string& n : checkpoint::list_directory(dir_)) {
    const int64_t s = step_of(n);
    if (s >= 0) files.emplace_back(s, n);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::pair<int64_t, std::string>> CheckpointManager::files_if_any() const {
  try {
    return files();
  } catch (const IoError&) {
    return {};  // no directory yet
  }
}

void CheckpointManager::check_writable() const {
  const std::string probe = dir_ + "/.mtf-write-probe-" + std::to_string(::getpid());
  try {
    checkpoint::make_directories(dir_);
    checkpoint::write_file_atomically(probe, "mtf\n");
    checkpoint::remove_file(probe);
  } catch (const IoError& e) {
    throw IoError("checkpoint directory \"" + dir_ + "\" cannot be written (" + e.what() +
                  "); give a writable --checkpoint_dir");
  }
}

std::vector<int64_t> CheckpointManager::steps() const {
  std::vector<int64_t> steps;
  for (const auto& f : files()) steps.push_back(f.first);
  return steps;
}

std::string CheckpointManager::path_of_step(int64_t step) const {
  const std::vector<std::pair<int64_t, std::string>> all = files_if_any();
  std::string present;
  for (const auto& [s, name] : all) {
    if (s == step) return dir_ + "/" + name;
    present += (present.empty() ? "" : ", ") + std::to_string(s);
  }
  throw IoError("checkpoint directory \"" + dir_ + "\" has no checkpoint of step " +
                std::to_string(step) + " (" +
                (present.empty() ? std::string("it has none") : "its steps: " + present) + ")");
}

void CheckpointManager::remove_later_than(int64_t step) const {
  for (const auto& [s, name] : files()) {
    if (s <= step) continue;
    checkpoint::remove_checkpoint(dir_ + "/" + name);
    std::fprintf(stderr,
                 "mtf: removed %s/%s: step %lld is past this run's step %lld, so it is of the "
                 "run before the restore of an older checkpoint\n",
                 dir_.c_str(), name.c_str(), static_cast<long long>(s),
                 static_cast<long long>(step));
  }
}

std::string CheckpointManager::save(Session& session, int64_t step,
                                    const std::map<std::string, std::string>& metadata) {
  if (step < 0) throw ValueError("CheckpointManager::save: step must be >= 0");
  // In a multi-process job every rank calls save(); rank 0 looks after the
  // directory, all write their slices (save_checkpoint), and all return once
  // the pointer names the new checkpoint.
  const double metric = metric_of(metadata);  // a bad value stops the save before it starts
  Transport* job = session.config().process_transport.get();
  const bool leader = !job || job->rank() == 0;
  if (leader) {
    checkpoint::make_directories(dir_);
    // What earlier saves that crashed left. No rank writes before rank 0
    // joins save_checkpoint's first collective, so nothing of this save
    // exists yet.
    checkpoint::remove_leftovers(dir_);
  }
  const std::string path = dir_ + "/" + file_name(step);
  save_checkpoint(session, path, step, metadata, options_);
  if (leader) {
    checkpoint::write_file_atomically(dir_ + "/" + kPointer, file_name(step) + "\n");
    remove_later_than(step);
    const std::string best_name = record_if_best(step, metric);
    // Keep the newest `keep_` and the best, never the one the pointer names.
    const auto all = files();
    for (size_t i = 0; i + static_cast<size_t>(keep_) < all.size(); ++i)
      if (all[i].second != file_name(step) && all[i].second != best_name)
        checkpoint::remove_checkpoint(dir_ + "/" + all[i].second);
  }
  if (job) {
    job->begin_collective({0, "checkpoint", "after saving " + file_name(step), 0});
    barrier(*job, Group::all(job->size(), job->rank()),
            collectives::tag_in(collectives::TagSpace::kCheckpointCommit, 0));
  }
  return path;
}

void CheckpointManager::set_keep_best(std::string metric, bool higher_is_better) {
  if (metric.empty())
    throw ValueError("CheckpointManager::set_keep_best: the metric name is empty");
  best_metric_ = std::move(metric);
  higher_is_better_ = higher_is_better;
}

std::optional<std::pair<std::string, double>> CheckpointManager::best() const {
  auto b = read_best(dir_);
  if (!b || !checkpoint::file_exists(dir_ + "/" + b->first)) return std::nullopt;
  b->first = dir_ + "/" + b->first;
  return b;
}

double CheckpointManager::metric_of(const std::map<std::string, std::string>& metadata) const {
  if (best_metric_.empty()) return NAN;
  const auto it = metadata.find(best_metric_);
  if (it == metadata.end()) return NAN;
  size_t used = 0;
  double value = NAN;
  try {
    value = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size() || std::isnan(value)) {
    throw ValueError("CheckpointManager::save: metadata \"" + best_metric_ + "\" is \"" +
                     it->second + "\", not a number; keep_best compares it as one (nothing saved)");
  }
  return value;
}

std::string CheckpointManager::record_if_best(int64_t step, double metric) {
  const auto recorded = read_best(dir_);
  const bool recorded_exists = recorded && checkpoint::file_exists(dir_ + "/" + recorded->first);
  const bool better = !std::isnan(metric) &&
                      (!recorded_exists ||
                       (higher_is_better_ ? metric > recorded->second : metric < recorded->second));
  if (!better) return recorded_exists ? recorded->first : "";
  char text[64];
  std::snprintf(text, sizeof(text), " %.17g\n", metric);
  checkpoint::write_file_atomically(dir_ + "/" + kBest, file_name(step) + text);
  return file_name(step);
}

std::optional<std::string> CheckpointManager::latest_path() const {
  const std::string pointer = dir_ + "/" + kPointer;
  std::string named;  // the pointer's checkpoint, when it is missing
  if (checkpoint::file_exists(pointer)) {
    std::string name = checkpoint::read_small_file(pointer);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (step_of(name) >= 0 && checkpoint::file_exists(dir_ + "/" + name)) return dir_ + "/" + name;
    named = name;
  }
  // No pointer (e.g. a crash between a checkpoint's rename and the first
  // pointer's): the newest complete file. Temporary files never match.
  const std::vector<std::pair<int64_t, std::string>> all = files_if_any();
  if (!named.empty()) {
    // A pointer naming a file that is gone: saves never leave one, so
    // someone moved it. Starting afresh would overwrite the run: refuse, or
    // go on from the newest file present, saying so.
    if (all.empty()) {
      throw IoError("checkpoint directory \"" + dir_ + "\": \"latest\" names \"" + named +
                    "\", which is missing, and no other checkpoint is there; put it back, or "
                    "remove \"latest\" to start afresh");
    }
    std::fprintf(stderr,
                 "mtf: checkpoint directory \"%s\": \"latest\" names \"%s\", which is "
                 "missing; using %s, the newest present\n",
                 dir_.c_str(), named.c_str(), all.back().second.c_str());
  }
  if (all.empty()) return std::nullopt;
  return dir_ + "/" + all.back().second;
}

std::vector<std::string> CheckpointManager::candidates() const {
  const std::optional<std::string> latest = latest_path();
  if (!latest) return {};
  std::vector<std::string> r{*latest};
  const auto all = files();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const std::string path = dir_ + "/" + it->second;
    if (path != *latest) r.push_back(path);
  }
  return r;
}

template <typename Attempt>
auto CheckpointManager::first_accepted(Attempt attempt) const
    -> std::optional<decltype(attempt(std::string()))> {
  const std::vector<std::string> paths = candidates();
  if (paths.empty()) return std::nullopt;
  std::string refusals;
  for (const std::string& path : paths) {
    try {
      auto result = attempt(path);
      if (!refusals.empty()) {
        std::fprintf(stderr, "mtf: using %s, the newest checkpoint that passes its checks\n",
                     path.c_str());
      }
      return result;
    } catch (const IoError& e) {
      std::fprintf(stderr, "mtf: checkpoint %s fails its checks: %s\n", path.c_str(), e.what());
      refusals += std::string(refusals.empty() ? "" : "; ") + e.what();
    }
  }
  throw IoError("checkpoint directory \"" + dir_ + "\": no checkpoint passes its checks (" +
                refusals + "); move the damaged files away to start afresh");
}

std::optional<std::string> CheckpointManager::latest_valid_path() const {
  return first_accepted([](const std::string& path) {
    read_checkpoint_info(path);
    return path;
  });
}

std::optional<CheckpointInfo> CheckpointManager::restore_latest(
    Session& session, const RestoreOptions& options) const {
  return first_accepted(
      [&](const std::string& path) { return restore_checkpoint(session, path, options); });
}

}  // namespace mtf
