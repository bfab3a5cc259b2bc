// cnn.h — a convolutional network on Fashion-MNIST, channels last:
// images [batch, h:32, w:32, ch:1] (the 28x28 images centred on a zero
// border, so that h and w stay even through both poolings and split over
// 2, 4 or 8 processors) -> conv 5x5 (c1) relu -> max_pool 2x2 -> conv 3x3
// (c2) relu -> max_pool 2x2 -> dense over [h:8, w:8, c2] to hidden, relu ->
// dense to classes:10 -> softmax cross-entropy, trained by Adam. The spatial
// dimensions keep their names throughout, so a layout such as "h:rows"
// splits every activation by rows and the convolutions exchange halos.
// Shared by the example, its test and the benchmark.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/idx_reader.h"
#include "mtf/mtf.h"

namespace mtf::models {

struct CnnConfig {
  int64_t batch_size = 100;
  int64_t c1 = 16, c2 = 32, hidden = 128;
  LearningRate learning_rate = 0.002f;  // Adam's; a float or a schedule (mtf/learning_rate.h)
  uint64_t seed = 1;
  int64_t eval_batch = 500;
  // Weights stored as .slice, activations and gradients in .activation (the
  // images are fed as float32 and cast); the loss is read as float32.
  VariableDType variable_dtype;
};

class Cnn {
 public:
  explicit Cnn(const CnnConfig& config);

  // One Adam step on a batch; returns its mean loss.
  float train_step(Session& session, const HostTensor& images, const HostTensor& labels);
  // The same on the examples `index` of `ds` (the whole batch's), reading
  // only the block of each input this process needs
  // (Session::local_feed_block): the examples of its batch share, and of
  // each image only the rows and columns its processors hold.
  float train_step(Session& session, const models::Dataset& ds, const std::vector<int64_t>& index);
  // Fraction of the examples classified correctly (all of them).
  double accuracy(Session& session, const models::Dataset& ds);
  // Builds and lowers the evaluation graph accuracy() runs (Mlp's).
  void check_evaluation(Session& session);

  Graph& graph() { return graph_; }
  // Pixels of the examples at `index` scaled to [0,1] and centred in 32x32,
  // as [batch, h, w, ch].
  static HostTensor images_batch(const models::Dataset& ds, const std::vector<int64_t>& index,
                                 const Dimension& batch);
  // The block of those pixels at rows [h_begin, h_begin + h.size) and
  // columns [w_begin, w_begin + w.size) of the 32x32 image, as [batch, h, w, ch].
  static HostTensor images_block(const models::Dataset& ds, const std::vector<int64_t>& index,
                                 const Dimension& batch, int64_t h_begin, const Dimension& h,
                                 int64_t w_begin, const Dimension& w);

  static constexpr int64_t kSide = 32;
  Dimension batch_dim, h_dim{"h", kSide}, w_dim{"w", kSide}, ch_dim{"ch", 1},
      classes_dim{"classes", 10};
  Tensor images, labels, loss;
  std::vector<Operation*> train_ops;

 private:
  struct EvalGraph {
    Dimension batch;
    Tensor images, predictions;
  };
  EvalGraph& eval_graph(int64_t n);
  Tensor logits_of(const Tensor& images);

  CnnConfig config_;
  Graph graph_;
  Mesh mesh_;
  std::vector<std::unique_ptr<EvalGraph>> evals_;
};

}  // namespace mtf::models
