#include "models/cnn.h"

#include <algorithm>

#include "models/mlp.h"

namespace mtf::models {

Cnn::Cnn(const CnnConfig& config)
    : batch_dim{"batch", config.batch_size}, config_(config), mesh_(graph_, "mesh") {
  graph_.set_seed(config.seed);
  config.variable_dtype.validate("CnnConfig::variable_dtype");
  graph_.set_layer_slice_dtype(config.variable_dtype.slice);
  images = placeholder(mesh_, Shape({batch_dim, h_dim, w_dim, ch_dim}), float32, "images");
  labels = placeholder(mesh_, Shape({batch_dim}), int32, "labels");
  const Tensor logits = logits_of(images);
  const Tensor xent = softmax_cross_entropy_with_logits(
      logits, one_hot(labels, classes_dim, 1.0f, 0.0f, logits.dtype()), classes_dim);
  loss = reduce_mean(xent.dtype() == float32 ? xent : cast(xent, float32));
  AdamOptimizer adam(config.learning_rate);
  train_ops = adam.minimize(loss);
}

Tensor Cnn::logits_of(const Tensor& images_f32) {
  const DType act = config_.variable_dtype.activation;
  const Tensor x = act == float32 ? images_f32 : cast(images_f32, act);
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

float Cnn::train_step(Session& session, const models::Dataset& ds,
                      const std::vector<int64_t>& index) {
  const Session::FeedBlock x = session.local_feed_block(images);
  const Session::FeedBlock y = session.local_feed_block(labels);
  auto examples = [&](const Session::FeedBlock& b) {
    const auto first = index.begin() + b.begin[0];
    return std::vector<int64_t>(first, first + b.shape[0].size);
  };
  const Dimension x_batch{batch_dim.name, x.shape[0].size},
      y_batch{batch_dim.name, y.shape[0].size};
  return train_step(
      session,
      images_block(ds, examples(x), x_batch, x.begin[1], x.shape[1], x.begin[2], x.shape[2]),
      Mlp::labels_batch(ds, examples(y), y_batch));
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

double Cnn::accuracy(Session& session, const models::Dataset& ds) {
  const int64_t rows = evaluation_rows(config_.eval_batch, config_.batch_size);
  return accuracy_in_batches(ds, rows, [&](const std::vector<int64_t>& index) {
    EvalGraph& e = eval_graph(rows);
    return session.run(e.predictions, {{e.images, images_batch(ds, index, e.batch)}});
  });
}

void Cnn::check_evaluation(Session& session) {
  session.counters_text(
      {eval_graph(evaluation_rows(config_.eval_batch, config_.batch_size)).predictions}, {});
}

HostTensor Cnn::images_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                             const Dimension& batch) {
  return images_block(ds, index, batch, 0, Dimension{"h", kSide}, 0, Dimension{"w", kSide});
}

HostTensor Cnn::images_block(const models::Dataset& ds, const std::vector<int64_t>& index,
                             const Dimension& batch, int64_t h_begin, const Dimension& h,
                             int64_t w_begin, const Dimension& w) {
  const int64_t rows = ds.images.rows, cols = ds.images.cols;
  if (rows > kSide || cols > kSide) {
    throw ValueError("Cnn: images of " + std::to_string(rows) + "x" + std::to_string(cols) +
                     " pixels do not fit the network's " + std::to_string(kSide) + "x" +
                     std::to_string(kSide) + " input");
  }
  if (h_begin < 0 || w_begin < 0 || h_begin + h.size > kSide || w_begin + w.size > kSide) {
    throw ValueError(
        "Cnn: block of rows [" + std::to_string(h_begin) + ", " + std::to_string(h_begin + h.size) +
        ") and columns [" + std::to_string(w_begin) + ", " + std::to_string(w_begin + w.size) +
        ") is not inside the " + std::to_string(kSide) + "x" + std::to_string(kSide) + " input");
  }
  // The image sits centred on a zero border: pixel (r, c) of the input is
  // pixel (r - top, c - left) of the stored image.
  const int64_t top = (kSide - rows) / 2, left = (kSide - cols) / 2;
  HostTensor t(Shape({batch, h, w, {"ch", 1}}), float32);
  float* p = t.data<float>();
  std::fill(p, p + t.num_elements(), 0.f);
  const int64_t r0 = std::max(h_begin, top), r1 = std::min(h_begin + h.size, top + rows);
  const int64_t c0 = std::max(w_begin, left), c1 = std::min(w_begin + w.size, left + cols);
  for (size_t i = 0; i < index.size(); ++i) {
    const uint8_t* src = ds.images.pixels.data() + index[i] * rows * cols;
    float* dst = p + static_cast<int64_t>(i) * h.size * w.size;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c)
        dst[(r - h_begin) * w.size + (c - w_begin)] =
            src[(r - top) * cols + (c - left)] * (1.0f / 255.0f);
  }
  return t;
}

}  // namespace mtf::models
