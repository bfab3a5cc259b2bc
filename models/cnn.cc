#include "models/cnn.h"

#include <algorithm>

#include "models/mlp.h"

namespace mtf::examples {

Cnn::Cnn(const CnnConfig& config)
    : batch_dim{"batch", config.batch_size}, config_(config), mesh_(graph_, "mesh") {
  graph_.set_seed(config.seed);
  images = placeholder(mesh_, Shape({batch_dim, h_dim, w_dim, ch_dim}), float32, "images");
  labels = placeholder(mesh_, Shape({batch_dim}), int32, "labels");
  loss = reduce_mean(softmax_cross_entropy_with_logits(logits_of(images),
                                                       one_hot(labels, classes_dim), classes_dim));
  AdamOptimizer adam(config.learning_rate);
  train_ops = adam.minimize(loss);
}

Tensor Cnn::logits_of(const Tensor& x) {
  layers::ConvOptions relu_conv;
  relu_conv.activation = [](const Tensor& t) { return relu(t); };
  Tensor h = layers::conv2d(x, Dimension{"c1", config_.c1}, {5, 5}, "conv1", relu_conv);
  h = layers::max_pool2d(h);  // 16x16
  h = layers::conv2d(h, Dimension{"c2", config_.c2}, {3, 3}, "conv2", relu_conv);
  h = layers::max_pool2d(h);  // 8x8
  const Shape& s = h.shape();
  layers::DenseOptions relu_dense;
  relu_dense.activation = [](const Tensor& t) { return relu(t); };
  h = layers::dense(h, {Dimension{"hidden", config_.hidden}},
                    {s[s.ndims() - 3], s[s.ndims() - 2], s[s.ndims() - 1]}, "dense1", relu_dense);
  return layers::dense(h, classes_dim, "dense2");
}

float Cnn::train_step(Session& session, const HostTensor& x, const HostTensor& y) {
  return session.run({loss}, {{images, x}, {labels, y}}, train_ops)[0].data<float>()[0];
}

Cnn::EvalGraph& Cnn::eval_graph(int64_t n) {
  for (auto& e : evals_)
    if (e->batch.size == n) return *e;
  auto e = std::make_unique<EvalGraph>();
  e->batch = {"batch", n};
  e->images = placeholder(mesh_, Shape({e->batch, h_dim, w_dim, ch_dim}), float32, "eval_images");
  e->predictions = top_k(logits_of(e->images), classes_dim, Dimension{"top", 1}).second;
  evals_.push_back(std::move(e));
  return *evals_.back();
}

double Cnn::accuracy(Session& session, const data::Dataset& ds) {
  return accuracy_in_batches(ds, config_.eval_batch, [&](const std::vector<int64_t>& index) {
    EvalGraph& e = eval_graph(static_cast<int64_t>(index.size()));
    return session.run(e.predictions, {{e.images, images_batch(ds, index, e.batch)}});
  });
}

HostTensor Cnn::images_batch(const data::Dataset& ds, const std::vector<int64_t>& index,
                             const Dimension& batch) {
  const int64_t rows = ds.images.rows, cols = ds.images.cols;
  if (rows > kSide || cols > kSide) {
    throw ValueError("Cnn: images of " + std::to_string(rows) + "x" + std::to_string(cols) +
                     " pixels do not fit the network's " + std::to_string(kSide) + "x" +
                     std::to_string(kSide) + " input");
  }
  const int64_t top = (kSide - rows) / 2, left = (kSide - cols) / 2;
  HostTensor t(Shape({batch, {"h", kSide}, {"w", kSide}, {"ch", 1}}), float32);
  float* p = t.data<float>();
  std::fill(p, p + t.num_elements(), 0.f);
  for (size_t i = 0; i < index.size(); ++i) {
    const uint8_t* src = ds.images.pixels.data() + index[i] * rows * cols;
    float* dst = p + static_cast<int64_t>(i) * kSide * kSide;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        dst[(top + r) * kSide + left + c] = src[r * cols + c] * (1.0f / 255.0f);
  }
  return t;
}

}  // namespace mtf::examples
