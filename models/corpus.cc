#include "models/corpus.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "mtf/errors.h"

namespace mtf::models {

Corpus load_text_corpus(const std::string& dir, int heldout_every) {
  if (heldout_every < 2) throw ValueError("load_text_corpus: heldout_every must be at least 2");
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    throw IoError("cannot open the text directory " + dir +
                  " (on Debian, `apt-get install fortunes` provides /usr/share/games/fortunes)");
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." ||
        (name.size() > 4 && name.compare(name.size() - 4, 4, ".dat") == 0))
      continue;
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  Corpus c;
  int64_t entry = 0;
  for (const std::string& name : names) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.empty() || text.find('\0') != std::string::npos) continue;
    c.files.push_back(name);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find("\n%\n", pos);
      end = end == std::string::npos ? text.size() : end + 3;
      std::string& to = (++entry % heldout_every == 0) ? c.heldout : c.train;
      to.append(text, pos, end - pos);
      pos = end;
    }
  }
  if (c.train.empty() || c.heldout.empty()) {
    throw IoError("no text files in " + dir +
                  " (on Debian, `apt-get install fortunes` provides /usr/share/games/fortunes)");
  }
  return c;
}

WindowSampler::WindowSampler(const std::string& text, int64_t batch, int64_t length, uint64_t seed)
    : text_(text), batch_(batch), length_(length), seed_(seed), rng_(seed) {
  if (static_cast<int64_t>(text.size()) < length + 1) {
    throw ValueError("the training text (" + std::to_string(text.size()) +
                     " bytes) is shorter than one window of --length + 1 bytes");
  }
}

namespace {
void fill_window(const std::string& text, int64_t start, int64_t row, int64_t length,
                 HostTensor& inputs, HostTensor& targets) {
  int32_t* in = inputs.data<int32_t>() + row * length;
  int32_t* tg = targets.data<int32_t>() + row * length;
  for (int64_t i = 0; i < length; ++i) {
    in[i] = static_cast<unsigned char>(text[start + i]);
    tg[i] = static_cast<unsigned char>(text[start + i + 1]);
  }
}
}  // namespace

void WindowSampler::next(HostTensor& inputs, HostTensor& targets) { next_rows(inputs, targets, 0); }

void WindowSampler::next_rows(HostTensor& inputs, HostTensor& targets, int64_t first) {
  const int64_t rows = inputs.shape().ndims() ? inputs.shape()[0].size : 0;
  if (first < 0 || first + rows > batch_ || targets.shape() != inputs.shape()) {
    throw ValueError("WindowSampler::next_rows: rows [" + std::to_string(first) + ", " +
                     std::to_string(first + rows) + ") of a batch of " + std::to_string(batch_) +
                     ", or inputs and targets of different shapes");
  }
  const uint64_t starts = text_.size() - static_cast<uint64_t>(length_);  // offsets 0..starts-1
  // Every window is drawn, so the stream stays the whole batch's; only the
  // wanted rows are read.
  for (int64_t b = 0; b < batch_; ++b) {
    const int64_t start = static_cast<int64_t>(rng_() % starts);
    if (b >= first && b < first + rows)
      fill_window(text_, start, b - first, length_, inputs, targets);
  }
  ++drawn_;
}

void WindowSampler::restore(const std::string& state) {
  int64_t n = 0;
  try {
    size_t used = 0;
    n = std::stoll(state, &used);
    if (used != state.size() || n < 0) throw std::invalid_argument(state);
  } catch (const std::exception&) {
    throw ValueError("window sampler state \"" + state + "\" is not a batch count");
  }
  rng_.seed(seed_);
  rng_.discard(static_cast<unsigned long long>(n * batch_));
  drawn_ = n;
}

int64_t window_batches(const std::string& text, int64_t batch, int64_t length) {
  if (text.size() < 1) return 0;
  return static_cast<int64_t>((text.size() - 1) / static_cast<size_t>(length)) / batch;
}

void window_batch(const std::string& text, int64_t index, HostTensor& inputs, HostTensor& targets) {
  const int64_t batch = inputs.shape()[0].size, length = inputs.shape()[1].size;
  for (int64_t b = 0; b < batch; ++b)
    fill_window(text, (index * batch + b) * length, b, length, inputs, targets);
}

double unigram_bits_per_byte(const std::string& train, const std::string& text) {
  std::vector<double> count(256, 1.0);
  for (unsigned char c : train) count[c] += 1;
  double total = 0;
  for (double n : count) total += n;
  double bits = 0;
  for (size_t i = 1; i < text.size(); ++i)
    bits -= std::log2(count[static_cast<unsigned char>(text[i])] / total);
  return text.size() > 1 ? bits / static_cast<double>(text.size() - 1) : 0.0;
}

}  // namespace mtf::models
