// corpus.h — byte-level text for the language model: the text files of a
// directory (the `fortunes` package's /usr/share/games/fortunes), split into
// training and held-out text, and batches of windows drawn from it.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mtf/host_tensor.h"

namespace mtf::models {

struct Corpus {
  std::string train, heldout;
  std::vector<std::string> files;  // the files read, sorted
};

// Reads every regular text file of `dir` (symbolic links, *.dat indexes and
// files holding NUL bytes are skipped), in name order, and splits it into
// entries at lines holding only "%" (the fortune separator); every
// `heldout_every`-th entry goes to the held-out text. Throws IoError naming
// the directory when it holds no text (with the package to install).
Corpus load_text_corpus(const std::string& dir, int heldout_every = 20);

// Windows of length+1 bytes at random offsets of a text: inputs are bytes
// 0..L-1, targets bytes 1..L. Deterministic for a seed; its position is a
// count of batches drawn, saved and restored for checkpoints.
class WindowSampler {
 public:
  WindowSampler(const std::string& text, int64_t batch, int64_t length, uint64_t seed);
  // Fills int32 [batch, length] inputs and targets.
  void next(HostTensor& inputs, HostTensor& targets);
  // The same batch's rows [first, first + rows) only, into [rows, length]
  // tensors: a process's share of it (Session::local_feed_block). The draw
  // stays in step with next(). ValueError for rows outside the batch.
  void next_rows(HostTensor& inputs, HostTensor& targets, int64_t first);
  std::string state() const { return std::to_string(drawn_); }
  void restore(const std::string& state);

 private:
  const std::string& text_;
  int64_t batch_, length_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  int64_t drawn_ = 0;
};

// Consecutive non-overlapping windows of a text, batch `index` of them
// (inputs/targets as above); the number of whole batches the text holds.
int64_t window_batches(const std::string& text, int64_t batch, int64_t length);
void window_batch(const std::string& text, int64_t index, HostTensor& inputs, HostTensor& targets);

// Bits per byte of `text`'s bytes 1.. under the byte frequencies of `train`
// (add-one smoothing): the baseline a language model has to beat.
double unigram_bits_per_byte(const std::string& train, const std::string& text);

}  // namespace mtf::models
