#include "models/unet3d.h"

#include <cstdio>

namespace mtf::models {
namespace {

UNet3dConfig checked(const UNet3dConfig& c) {
  if (c.batch < 1 || c.side < 1 || c.channels < 1 || c.levels < 1 || c.classes < 2) {
    throw ValueError(
        "UNet3d: batch, side, channels and levels must be positive and classes at least 2");
  }
  const int64_t scale = int64_t{1} << (c.levels - 1);
  if (c.levels > 8 || c.side % scale != 0) {
    throw ValueError("UNet3d: side " + std::to_string(c.side) +
                     " must be divisible by 2^(levels-1) = " + std::to_string(scale) +
                     " (and levels at most 8)");
  }
  return c;
}

layers::ConvOptions relu_conv() {
  layers::ConvOptions o;
  o.activation = [](const Tensor& t) { return relu(t); };
  return o;
}

}  // namespace

UNet3d::UNet3d(const UNet3dConfig& config)
    : batch_dim{"batch", checked(config).batch},
      d_dim{"d", config.side},
      h_dim{"h", config.side},
      w_dim{"w", config.side},
      classes_dim{"classes", config.classes},
      config_(config),
      mesh_(graph_, "mesh") {
  graph_.set_seed(config.seed);
  volumes = placeholder(mesh_, Shape({batch_dim, d_dim, h_dim, w_dim, ch_dim}), float32, "volumes");
  labels = placeholder(mesh_, Shape({batch_dim, d_dim, h_dim, w_dim}), int32, "labels");

  std::vector<Tensor> skips;
  Tensor x = volumes;
  int64_t channels = config.channels;
  for (int64_t level = 0; level + 1 < config.levels; ++level, channels *= 2) {
    x = block(x, "down" + std::to_string(level), channels);
    skips.push_back(x);
    x = layers::max_pool3d(x);
  }
  x = block(x, "bottom", channels);
  for (int64_t level = config.levels - 2; level >= 0; --level) {
    channels /= 2;
    const std::string name = "up" + std::to_string(level);
    // The upsampled tensor and the skip meet on one channel dimension.
    const Dimension cat{name + "_cat", channels};
    layers::ConvOptions stride2;
    stride2.strides = {2, 2, 2};
    Tensor up = layers::conv3d_transpose(x, cat, {2, 2, 2}, name + "/upsample", stride2);
    const Tensor& skip = skips[static_cast<size_t>(level)];
    const std::string skip_channels = skip.shape()[skip.shape().ndims() - 1].name;
    x = concat({up, rename_dimension(skip, skip_channels, cat.name)}, cat.name);
    x = block(x, name, channels);
  }
  const Tensor logits = layers::conv3d(x, classes_dim, {1, 1, 1}, "logits");
  loss = reduce_mean(
      softmax_cross_entropy_with_logits(logits, one_hot(labels, classes_dim), classes_dim));
  AdamOptimizer adam(config.learning_rate);
  train_ops = adam.minimize(loss);
}

Tensor UNet3d::block(Tensor x, const std::string& name, int64_t channels) {
  x = layers::conv3d(x, Dimension{name + "_a", channels}, {3, 3, 3}, name + "/conv_a", relu_conv());
  return layers::conv3d(x, Dimension{name + "_b", channels}, {3, 3, 3}, name + "/conv_b",
                        relu_conv());
}

int64_t UNet3d::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& v : graph_.trainable_variables()) n += v.shape().num_elements();
  return n;
}

std::string UNet3d::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "model: unet3d, %lld levels, %lld-%lld channels, batch %lld volumes of %lld^3 "
                "voxels, %lld classes, %.3gM parameters",
                static_cast<long long>(config_.levels), static_cast<long long>(config_.channels),
                static_cast<long long>(config_.channels << (config_.levels - 1)),
                static_cast<long long>(config_.batch), static_cast<long long>(config_.side),
                static_cast<long long>(config_.classes),
                static_cast<double>(num_parameters()) / 1e6);
  return buf;
}

}  // namespace mtf::models
