#include "models/mlp.h"

#include <algorithm>
#include <cstdio>

#include "models/config_checks.h"

namespace mtf::models {
namespace {

// The config, its sizes checked (before any dimension is made of them).
const MlpConfig& checked(const MlpConfig& c) {
  check_sizes("mlp", {{"batch_size", c.batch_size}, {"hidden", c.hidden}});
  return c;
}

}  // namespace

Mlp::Mlp(const MlpConfig& config)
    : batch_dim{"batch", checked(config).batch_size},
      hidden_dim{"hidden", config.hidden},
      config_(config),
      mesh_(graph_, "mesh") {
  graph_.set_seed(config.seed);
  const VariableDType& vd = config.variable_dtype;
  w1_ = get_variable(mesh_, "w1", Shape({rows_dim, cols_dim, hidden_dim}),
                     Initializer::glorot_uniform(), vd);
  w2_ = get_variable(mesh_, "w2", Shape({hidden_dim, classes_dim}), Initializer::glorot_uniform(),
                     vd);
  images = placeholder(mesh_, Shape({batch_dim, rows_dim, cols_dim}), float32, "images");
  labels = placeholder(mesh_, Shape({batch_dim}), int32, "labels");
  Tensor logits = logits_of(images, batch_dim);
  Tensor xent = softmax_cross_entropy_with_logits(
      logits, one_hot(labels, classes_dim, 1.0f, 0.0f, logits.dtype()), classes_dim);
  loss = reduce_mean(xent.dtype() == float32 ? xent : cast(xent, float32));
  SgdOptimizer sgd(config.learning_rate);
  train_ops = sgd.minimize(loss);
}

Tensor Mlp::logits_of(const Tensor& images_f32, const Dimension& batch) {
  const DType act = config_.variable_dtype.activation;
  const Tensor x = act == float32 ? images_f32 : cast(images_f32, act);
  Tensor hidden = relu(einsum({x, w1_}, Shape({batch, hidden_dim})));
  return einsum({hidden, w2_}, Shape({batch, classes_dim}));
}

float Mlp::train_step(Session& session, const HostTensor& x, const HostTensor& y) {
  return session.run({loss}, {{images, x}, {labels, y}}, train_ops)[0].data<float>()[0];
}

float Mlp::train_step(Session& session, const models::Dataset& ds,
                      const std::vector<int64_t>& index) {
  const Session::FeedBlock block = session.local_feed_block(images);
  const Session::FeedBlock label_block = session.local_feed_block(labels);
  // Only batch may be split for a share of it to be read; otherwise (pixels
  // split over processors too) the whole batch is fed.
  const bool batch_only =
      block.shape[1].size == rows_dim.size && block.shape[2].size == cols_dim.size &&
      label_block.begin[0] == block.begin[0] && label_block.shape[0].size == block.shape[0].size;
  if (block.whole || !batch_only) {
    return train_step(session, images_batch(ds, index, batch_dim),
                      labels_batch(ds, index, batch_dim));
  }
  const auto first = index.begin() + block.begin[0];
  const std::vector<int64_t> mine(first, first + block.shape[0].size);
  const Dimension local{batch_dim.name, block.shape[0].size};
  return train_step(session, images_batch(ds, mine, local), labels_batch(ds, mine, local));
}

Mlp::EvalGraph& Mlp::eval_graph(int64_t n) {
  for (auto& e : evals_)
    if (e->batch.size == n) return *e;
  auto e = std::make_unique<EvalGraph>();
  e->batch = {"batch", n};
  e->images = placeholder(mesh_, Shape({e->batch, rows_dim, cols_dim}), float32, "eval_images");
  Tensor logits = logits_of(e->images, e->batch);
  // argmax as top_1 over classes.
  e->predictions = top_k(logits, classes_dim, Dimension{"top", 1}).second;
  evals_.push_back(std::move(e));
  return *evals_.back();
}

double Mlp::accuracy(Session& session, const models::Dataset& ds) {
  const int64_t rows = evaluation_rows(config_.eval_batch, config_.batch_size);
  return accuracy_in_batches(ds, rows, [&](const std::vector<int64_t>& index) {
    EvalGraph& e = eval_graph(rows);
    return session.run(e.predictions, {{e.images, images_batch(ds, index, e.batch)}});
  });
}

void Mlp::check_evaluation(Session& session) {
  session.counters_text(
      {eval_graph(evaluation_rows(config_.eval_batch, config_.batch_size)).predictions}, {});
}

int64_t evaluation_rows(int64_t eval_batch, int64_t batch_size) {
  return batch_size * std::max<int64_t>(1, eval_batch / batch_size);
}

double accuracy_in_batches(
    const models::Dataset& ds, int64_t batch,
    const std::function<HostTensor(const std::vector<int64_t>& index)>& predict) {
  const int64_t total = ds.images.count;
  int64_t correct = 0;
  for (int64_t first = 0; first < total; first += batch) {
    const int64_t n = std::min(batch, total - first);
    std::vector<int64_t> index(batch, first);  // past n: the first again, not counted
    for (int64_t i = 0; i < n; ++i) index[i] = first + i;
    const HostTensor pred = predict(index);
    const int32_t* p = pred.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) correct += p[i] == ds.labels.labels[first + i];
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

HostTensor Mlp::images_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                             const Dimension& batch) {
  const int64_t pixels = ds.images.rows * ds.images.cols;
  HostTensor t(Shape({batch, {"rows", ds.images.rows}, {"cols", ds.images.cols}}), float32);
  float* p = t.data<float>();
  for (size_t i = 0; i < index.size(); ++i) {
    const uint8_t* src = ds.images.pixels.data() + index[i] * pixels;
    for (int64_t j = 0; j < pixels; ++j) p[i * pixels + j] = src[j] * (1.0f / 255.0f);
  }
  return t;
}

HostTensor Mlp::labels_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                             const Dimension& batch) {
  HostTensor t(Shape({batch}), int32);
  int32_t* p = t.data<int32_t>();
  for (size_t i = 0; i < index.size(); ++i) p[i] = ds.labels.labels[index[i]];
  return t;
}

BatchSampler::BatchSampler(int64_t num_examples, int64_t batch_size, uint64_t seed)
    : seed_(seed), n_(num_examples), batch_(batch_size), rng_(seed), order_(num_examples) {
  if (batch_size <= 0 || batch_size > num_examples) {
    throw ValueError("batch size " + std::to_string(batch_size) + " must be in 1.." +
                     std::to_string(num_examples) + " (the number of training examples)");
  }
  for (int64_t i = 0; i < n_; ++i) order_[i] = i;
  shuffle();
}

std::string BatchSampler::state() const {
  return std::to_string(shuffles_) + " " + std::to_string(pos_);
}

void BatchSampler::restore(const std::string& state) {
  long long shuffles = -1, pos = -1;
  if (std::sscanf(state.c_str(), "%lld %lld", &shuffles, &pos) != 2 || shuffles < 1 || pos < 0 ||
      pos > n_) {
    throw ValueError("batch sampler state \"" + state + "\" is malformed");
  }
  rng_.seed(seed_);
  for (int64_t i = 0; i < n_; ++i) order_[i] = i;
  shuffles_ = 0;
  for (long long k = 0; k < shuffles; ++k) shuffle();
  pos_ = pos;
}

void BatchSampler::shuffle() {
  ++shuffles_;
  for (int64_t i = n_ - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng_() % static_cast<uint64_t>(i + 1));
    std::swap(order_[i], order_[j]);
  }
  pos_ = 0;
}

std::vector<int64_t> BatchSampler::next() {
  if (pos_ + batch_ > n_) shuffle();
  std::vector<int64_t> b(order_.begin() + pos_, order_.begin() + pos_ + batch_);
  pos_ += batch_;
  return b;
}

}  // namespace mtf::models
