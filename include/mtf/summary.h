// mtf/summary.h — a training run's scalars step by step, as TensorBoard
// event files (what Mesh TensorFlow's scalar summaries and PyTorch's
// torch.utils.tensorboard write) and as JSON lines for scripts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mtf {

class SummaryWriter {
 public:
  // Writes a new event file, events.out.tfevents.<seconds>.<host>.<pid>, in
  // `tensorboard_dir` (made, with its parents, when missing; "": none) and
  // appends to `jsonl_path` ("": none; its directory made when missing), so
  // a resumed run adds to both (a
  // new event file beside the old ones; TensorBoard reads them all).
  // IoError naming the path and the system's reason when either cannot be
  // opened.
  SummaryWriter(const std::string& tensorboard_dir, const std::string& jsonl_path);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One step's scalars, (tag, value) in the order given: one Event holding
  // them all (values as float32, as TensorBoard keeps them) and one line
  // {"step": S, "wall_time": T, "<tag>": value, ...} (values as doubles,
  // null when not finite). Both are handed to the system at once, so
  // TensorBoard and `tail -f` see the step. IoError when a write fails (a
  // full disk), naming the file.
  void write(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // The event file's path ("" without a TensorBoard directory).
  const std::string& event_file() const;

 private:
  struct Files;
  std::unique_ptr<Files> files_;
};

}  // namespace mtf
