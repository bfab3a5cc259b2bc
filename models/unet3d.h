// unet3d.h — a 3-D U-Net for volumetric segmentation, channels last, the
// model Mesh TensorFlow trains by spatial partitioning: volumes
// [batch, d, h, w, ch:1] -> per level, two 3x3x3 convolutions with relu and
// (on the way down) a 2x2x2 max pool; at the bottom two more convolutions;
// on the way up a 2x2x2 stride-2 transposed convolution, concatenated with
// the level's encoder output (the skip connection), and two convolutions;
// a 1x1x1 convolution to classes and a per-voxel softmax cross-entropy,
// trained by Adam. d, h and w keep their names at every level, so a layout
// such as "d:rows;h:cols" splits every activation of the network and its
// convolutions exchange halos. Built for mtf-sim, which needs only shapes:
// the full-size network does not fit one core's memory at batch 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::models {

struct UNet3dConfig {
  int64_t batch = 32;
  int64_t side = 256;     // d, h and w; divisible by 2^(levels-1)
  int64_t channels = 32;  // at the top level, doubling per level down
  int64_t levels = 4;
  int64_t classes = 2;
  LearningRate learning_rate = 1e-4f;  // Adam's; a float or a schedule
  uint64_t seed = 1;
};

class UNet3d {
 public:
  // Throws ValueError when side is not divisible by 2^(levels-1) or a size
  // is not positive.
  explicit UNet3d(const UNet3dConfig& config);

  Graph& graph() { return graph_; }
  const UNet3dConfig& config() const { return config_; }
  // Trainable parameters (filters and biases).
  int64_t num_parameters() const;
  // "model: unet3d, ..." for reports.
  std::string describe() const;

  Dimension batch_dim, d_dim, h_dim, w_dim, ch_dim{"ch", 1}, classes_dim;
  Tensor volumes, labels, loss;
  std::vector<Operation*> train_ops;

 private:
  Tensor block(Tensor x, const std::string& name, int64_t channels);

  UNet3dConfig config_;
  Graph graph_;
  Mesh mesh_;
};

}  // namespace mtf::models
