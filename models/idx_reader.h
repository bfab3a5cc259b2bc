// idx_reader.h — reads the IDX files (gzip-compressed or plain) in which
// MNIST and Fashion-MNIST are distributed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtf::models {

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

struct IdxLabels {
  int64_t count = 0;
  std::vector<uint8_t> labels;
};

// Throw mtf::IoError naming the file for a missing file, a wrong magic
// number, an implausible header or a truncated body.
IdxImages read_idx_images(const std::string& path);
IdxLabels read_idx_labels(const std::string& path);

// A Fashion-MNIST (or MNIST) split from `dir`: "train" or "t10k". Looks for
// <split>-images-idx3-ubyte(.gz) and <split>-labels-idx1-ubyte(.gz); checks
// that image and label counts agree.
struct Dataset {
  IdxImages images;
  IdxLabels labels;
};
Dataset load_mnist_split(const std::string& dir, const std::string& split);

}  // namespace mtf::models
