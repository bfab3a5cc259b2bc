// mlp.h — the model of Mesh TensorFlow's README, on Fashion-MNIST:
// images [batch, rows:28, cols:28] -> einsum with w1 [rows, cols, hidden]
// -> relu -> einsum with w2 [hidden, classes:10] -> softmax cross-entropy,
// trained by SGD. Shared by the example, its test and the benchmark.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "models/idx_reader.h"
#include "mtf/mtf.h"

namespace mtf::models {

struct MlpConfig {
  int64_t batch_size = 100;
  int64_t hidden = 1024;
  LearningRate learning_rate = 0.2f;  // SGD's; a float or a schedule (mtf/learning_rate.h)
  uint64_t seed = 1;
  int64_t eval_batch = 1000;
  // Weights stored as .slice, activations and gradients in .activation (the
  // images are fed as float32 and cast); the loss is read as float32.
  VariableDType variable_dtype;
};

class Mlp {
 public:
  explicit Mlp(const MlpConfig& config);

  // One SGD step on a batch; returns its mean loss.
  float train_step(Session& session, const HostTensor& images, const HostTensor& labels);
  // The same on the examples `index` of `ds` (the whole batch's), reading
  // and feeding only those this process's processors hold
  // (Session::local_feed_block): on n data-parallel ranks, 1/n of the batch.
  float train_step(Session& session, const models::Dataset& ds, const std::vector<int64_t>& index);
  // Fraction of the examples classified correctly (all of them, in batches
  // of evaluation_rows(eval_batch, batch_size); the last one padded).
  double accuracy(Session& session, const models::Dataset& ds);
  // Builds and lowers the evaluation graph accuracy() runs, so that a
  // layout it cannot take is an error before training, not after.
  void check_evaluation(Session& session);

  Graph& graph() { return graph_; }
  const MlpConfig& config() const { return config_; }
  // Pixels of examples [first, first+n) of ds scaled to [0,1], as [batch, rows, cols].
  static HostTensor images_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                                 const Dimension& batch);
  static HostTensor labels_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                                 const Dimension& batch);

  Dimension batch_dim, rows_dim{"rows", 28}, cols_dim{"cols", 28}, hidden_dim,
      classes_dim{"classes", 10};
  Tensor images, labels, loss;
  std::vector<Operation*> train_ops;

 private:
  // Predicted class per example for an eval batch of `n` examples.
  struct EvalGraph {
    Dimension batch;
    Tensor images, predictions;
  };
  EvalGraph& eval_graph(int64_t n);
  Tensor logits_of(const Tensor& images, const Dimension& batch);

  MlpConfig config_;
  Graph graph_;
  Mesh mesh_;
  Tensor w1_, w2_;
  std::vector<std::unique_ptr<EvalGraph>> evals_;
};

// The rows of an evaluation batch: the most whole training batches within
// `eval_batch` (at least one), so that any layout the training step takes
// splits it too.
int64_t evaluation_rows(int64_t eval_batch, int64_t batch_size);

// Fraction of ds's examples whose predicted class (an int32 tensor of one
// per example, from predict(indices)) is their label, in batches of exactly
// `batch` examples: the last is padded with its first example, whose extra
// predictions are not counted, so one graph serves every batch.
double accuracy_in_batches(
    const models::Dataset& ds, int64_t batch,
    const std::function<HostTensor(const std::vector<int64_t>& index)>& predict);

// Epoch-wise shuffled batches, deterministic for a seed (own Fisher-Yates on
// mt19937_64, so every platform draws the same order).
class BatchSampler {
 public:
  BatchSampler(int64_t num_examples, int64_t batch_size, uint64_t seed);
  std::vector<int64_t> next();
  // Where the sampler is, as text ("<shuffles> <position>"), and going back
  // there (replaying the shuffles from the seed), for checkpoints.
  std::string state() const;
  void restore(const std::string& state);

 private:
  void shuffle();
  uint64_t seed_;
  int64_t shuffles_ = 0;
  int64_t n_, batch_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
};

}  // namespace mtf::models
