// The Fashion-MNIST MLP example: data loading errors, and training to the
// accuracy the README promises with the example's default settings.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "models/cnn.h"
#include "models/idx_reader.h"
#include "models/mlp.h"

namespace mtf {
namespace {

const char* kDataDir = "/usr/share/datasets/fashion-mnist";

class DataErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mtf_idx_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
    std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return p;
  }
  std::filesystem::path dir_;
};

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(DataErrorsTest, MissingDirectoryNamesIt) {
  std::string msg = error_of([] { models::load_mnist_split("/no/such/dir", "train"); });
  EXPECT_NE(msg.find("/no/such/dir"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
}

TEST_F(DataErrorsTest, WrongMagicNamesTheFile) {
  std::string p = write("x-images-idx3-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 1});
  std::string msg = error_of([&] { models::read_idx_images(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic number 0x00000801, expected 0x00000803"), std::string::npos) << msg;
}

TEST_F(DataErrorsTest, TruncatedFileNamesTheFile) {
  // Header says 2 images of 2x2 but only 5 pixel bytes follow.
  std::string p = write("t-images-idx3-ubyte.gz",
                        {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5});
  std::string msg = error_of([&] { models::read_idx_images(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  std::string lp = write("l-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 9, 1});
  EXPECT_NE(error_of([&] { models::read_idx_labels(lp); }).find("truncated"), std::string::npos);
}

TEST_F(DataErrorsTest, ReadsAValidFile) {
  std::string p =
      write("ok-images-idx3-ubyte.gz", {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 7, 9});
  auto im = models::read_idx_images(p);
  EXPECT_EQ(im.count, 1);
  EXPECT_EQ(im.pixels, (std::vector<uint8_t>{7, 9}));
}

// The real MLP on real data: data-parallel, model-parallel and hybrid layouts
// print the one-processor loss trajectory (1e-5 relative) over the first
// steps. (Over hundreds of steps, ~1e-9 rounding differences in the weights
// are amplified by SGD; see docs/ARCHITECTURE.md.)
// A process of a spatially split job reads a block of rows and columns of
// each image (sharded input): every block is the matching part of the whole
// padded image, border included.
TEST_F(DataErrorsTest, CnnImageBlocksAreSlicesOfTheWholeBatch) {
  models::Dataset ds;
  ds.images.count = 3;
  ds.images.rows = 28;
  ds.images.cols = 28;
  ds.images.pixels.resize(3 * 28 * 28);
  for (size_t i = 0; i < ds.images.pixels.size(); ++i)
    ds.images.pixels[i] = static_cast<uint8_t>(i * 7 + 1);
  const std::vector<int64_t> index = {2, 0};
  const Dimension batch{"batch", 2};
  const HostTensor whole = models::Cnn::images_batch(ds, index, batch);
  const int64_t side = models::Cnn::kSide;
  for (int64_t h0 : {0, 1, 8, 16, 30})
    for (int64_t hn : {2, 16})
      for (int64_t w0 : {0, 3, 16})
        for (int64_t wn : {1, 16}) {
          if (h0 + hn > side || w0 + wn > side) continue;
          const HostTensor b =
              models::Cnn::images_block(ds, index, batch, h0, {"h", hn}, w0, {"w", wn});
          ASSERT_EQ(b.shape().to_string(),
                    Shape({batch, {"h", hn}, {"w", wn}, {"ch", 1}}).to_string());
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t r = 0; r < hn; ++r)
              for (int64_t c = 0; c < wn; ++c)
                ASSERT_EQ(b.data<float>()[(i * hn + r) * wn + c],
                          whole.data<float>()[(i * side + h0 + r) * side + w0 + c])
                    << "image " << i << " row " << h0 + r << " column " << w0 + c;
        }
  EXPECT_THROW(models::Cnn::images_block(ds, index, batch, 20, {"h", 16}, 0, {"w", 32}),
               ValueError);
  EXPECT_THROW(models::Cnn::images_block(ds, index, batch, 0, {"h", 16}, -1, {"w", 4}), ValueError);
}

TEST(MnistTrainingTest, MeshLayoutsFollowTheOneProcessorTrajectory) {
  if (!std::filesystem::exists(kDataDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  auto train = models::load_mnist_split(kDataDir, "train");
  models::MlpConfig config;
  auto trajectory = [&](const char* mesh, const char* layout) {
    models::Mlp mlp(config);
    MeshConfig c;
    c.mesh_shape = MeshShape(mesh);
    c.layout = LayoutRules(layout);
    Session session(mlp.graph(), c);
    models::BatchSampler sampler(train.images.count, config.batch_size, config.seed);
    std::vector<float> losses;
    for (int step = 0; step < 12; ++step) {
      auto idx = sampler.next();
      losses.push_back(mlp.train_step(session, models::Mlp::images_batch(train, idx, mlp.batch_dim),
                                      models::Mlp::labels_batch(train, idx, mlp.batch_dim)));
    }
    return losses;
  };
  const auto one = trajectory("", "");
  for (auto [mesh, layout] : {std::pair{"all:4", "batch:all"}, std::pair{"all:4", "hidden:all"},
                              std::pair{"rows:2;cols:2", "batch:rows;hidden:cols"}}) {
    const auto got = trajectory(mesh, layout);
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_NEAR(got[i], one[i], 1e-5f * one[i]) << mesh << " " << layout << " step " << i + 1;
  }
}

TEST(MnistTrainingTest, DefaultSettingsReachTheAdvertisedAccuracy) {
  if (!std::filesystem::exists(kDataDir)) GTEST_SKIP() << "Fashion-MNIST not installed";
  auto train = models::load_mnist_split(kDataDir, "train");
  auto test = models::load_mnist_split(kDataDir, "t10k");
  models::MlpConfig config;  // the example's defaults
  models::Mlp mlp(config);
  Session session(mlp.graph());
  models::BatchSampler sampler(train.images.count, config.batch_size, config.seed);
  const int steps = 3000;  // the example's default --steps
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    auto idx = sampler.next();
    float loss = mlp.train_step(session, models::Mlp::images_batch(train, idx, mlp.batch_dim),
                                models::Mlp::labels_batch(train, idx, mlp.batch_dim));
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step < 100) first += loss;
    if (step >= steps - 100) last += loss;
  }
  EXPECT_LT(last, 0.5 * first) << "mean loss of the first 100 steps " << first / 100
                               << ", of the last 100 " << last / 100;
  const double acc = mlp.accuracy(session, test);
  std::printf("test accuracy %.4f\n", acc);
  EXPECT_GE(acc, 0.85);
}

}  // namespace
}  // namespace mtf
