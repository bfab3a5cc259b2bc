// One training step of the Fashion-MNIST MLP at batch 100 and 1000, against
// the same five GEMMs called directly through cblas_sgemm in the same run
// (forward x*w1 and h*w2; backward dW2, dh and dW1). The ratio
// gemm-time / step-time is the fraction of the sgemm rate the whole step
// achieves on its matmul FLOPs; the rest is elementwise work, the update and
// per-op overhead.
#include <cblas.h>

#include <cstdio>
#include <random>

#include "models/mlp.h"
#include "paired.h"

namespace {

using namespace mtf;

constexpr int64_t kPixels = 784, kHidden = 1024, kClasses = 10;

double matmul_flops(int64_t b) {
  return 2.0 * b * (2.0 * kPixels * kHidden + 3.0 * kHidden * kClasses);
}

// One training step against its five GEMMs called directly, paired.
void BM_MlpStepVsGemms(benchmark::State& state) {
  const int64_t batch = state.range(0);
  models::MlpConfig config;
  config.batch_size = batch;
  models::Mlp mlp(config);
  Session session(mlp.graph());
  std::mt19937 rng(1);
  HostTensor images(mlp.images.shape(), float32), labels(mlp.labels.shape(), int32);
  for (int64_t i = 0; i < images.num_elements(); ++i)
    images.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  auto step = [&] { benchmark::DoNotOptimize(mlp.train_step(session, images, labels)); };

  const int b = static_cast<int>(batch);
  const int p = kPixels, h = kHidden, c = kClasses;
  std::vector<float> x(size_t(b) * p, 0.5f), w1(size_t(p) * h, 0.01f), hid(size_t(b) * h),
      w2(size_t(h) * c, 0.01f), logits(size_t(b) * c), dl(size_t(b) * c, 0.1f), dw2(size_t(h) * c),
      dh(size_t(b) * h), dw1(size_t(p) * h);
  const auto N = CblasNoTrans, T = CblasTrans;
  auto gemms = [&] {
    cblas_sgemm(CblasRowMajor, N, N, b, h, p, 1.f, x.data(), p, w1.data(), h, 0.f, hid.data(), h);
    cblas_sgemm(CblasRowMajor, N, N, b, c, h, 1.f, hid.data(), h, w2.data(), c, 0.f, logits.data(),
                c);
    cblas_sgemm(CblasRowMajor, T, N, h, c, b, 1.f, hid.data(), h, dl.data(), c, 0.f, dw2.data(), c);
    cblas_sgemm(CblasRowMajor, N, T, b, h, c, 1.f, dl.data(), c, w2.data(), c, 0.f, dh.data(), h);
    cblas_sgemm(CblasRowMajor, T, N, p, h, b, 1.f, x.data(), p, dh.data(), h, 0.f, dw1.data(), h);
    benchmark::DoNotOptimize(dw1.data());
  };
  mtf::bench::run_paired(state, gemms, step, matmul_flops(batch), "matmul_GFLOP/s");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("mlp_step_vs_gemms", BM_MlpStepVsGemms)
      ->Arg(100)
      ->Arg(1000)
      ->MinTime(2.0);
  return mtf::bench::run_with_summary(
      argc, argv,
      "MLP training step: its matmul FLOP rate as a fraction of direct sgemm on the same GEMMs,\n"
      "paired in the same run (targets: >= 0.60 at batch 100, >= 0.85 at batch 1000):");
}
