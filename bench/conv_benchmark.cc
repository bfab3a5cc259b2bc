// The convolution kernels against cblas_sgemm on their equivalent GEMM
// shape, paired in the same run: forward y[rows, out] = patches[rows, taps*in]
// · w[taps*in, out]; input gradient patches' gradient [rows, taps*in] =
// dy[rows, out] · wᵀ; filter gradient dw[taps*in, out] = patchesᵀ · dy. rows
// = batch × output positions. The shapes are the CNN example's two
// convolutions at batch 100 (models/cnn.h). Counter "ratio" = sgemm time /
// kernel time (target >= 0.7): what the kernel pays beyond the GEMM
// (gathering patches, scattering gradients) shows there. reproducible_*:
// the fixed-order path of reproducible mode (no target).
#include <cblas.h>

#include <string>
#include <vector>

#include "kernels/conv.h"
#include "paired.h"
#include "random_data.h"

namespace {

using namespace mtf;

struct Case {
  const char* name;
  int64_t batch, side, in, out, kernel;
};

enum class Direction { kForward, kInputGrad, kFilterGrad };

using mtf::bench::random_floats;
using mtf::bench::random_host;

void BM_ConvVsSgemm(benchmark::State& state, Case c, Direction dir, bool fixed_order) {
  // SAME padding, stride 1, over h and w.
  kernels::ConvAxis a;
  a.x_size = a.y_size = c.side;
  a.kernel = c.kernel;
  a.pad_before = (c.kernel - 1) / 2;
  const std::vector<kernels::ConvAxis> axes = {a, a};
  const kernels::SpatialBegin at = {0, 0};
  const Dimension b{"b", c.batch}, h{"h", c.side}, w{"w", c.side}, ci{"ci", c.in}, co{"co", c.out},
      k0{"k0", c.kernel}, k1{"k1", c.kernel};
  HostTensor x = random_host(Shape({b, h, w, ci}), 1);
  HostTensor y = random_host(Shape({b, h, w, co}), 2);
  HostTensor filter = random_host(Shape({k0, k1, ci, co}), 3);
  const int m = static_cast<int>(c.batch * c.side * c.side);
  const int kc = static_cast<int>(c.kernel * c.kernel * c.in), n = static_cast<int>(c.out);
  const std::vector<float> pa = random_floats(static_cast<size_t>(m) * kc, 4),
                           pb = random_floats(static_cast<size_t>(kc) * n, 5),
                           dy = random_floats(static_cast<size_t>(m) * n, 6);
  std::vector<float> pc(static_cast<size_t>(m) * std::max(kc, n));
  auto sgemm = [&] {
    switch (dir) {
      case Direction::kForward:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, kc, 1.f, pa.data(), kc,
                    pb.data(), n, 0.f, pc.data(), n);
        break;
      case Direction::kInputGrad:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, kc, n, 1.f, dy.data(), n, pb.data(),
                    n, 0.f, pc.data(), kc);
        break;
      case Direction::kFilterGrad:
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kc, n, m, 1.f, pa.data(), kc,
                    dy.data(), n, 0.f, pc.data(), n);
        break;
    }
    benchmark::DoNotOptimize(pc.data());
  };
  auto kernel = [&] {
    switch (dir) {
      case Direction::kForward:
        kernels::conv_forward(axes, x, at, filter, y, at, fixed_order);
        break;
      case Direction::kInputGrad:
        kernels::conv_input_grad(axes, y, at, filter, x, at, fixed_order);
        break;
      case Direction::kFilterGrad:
        kernels::conv_filter_grad(axes, x, at, y, at, filter, fixed_order);
        break;
    }
    benchmark::DoNotOptimize(x.raw_data());
    benchmark::DoNotOptimize(y.raw_data());
    benchmark::DoNotOptimize(filter.raw_data());
  };
  mtf::bench::run_paired(state, sgemm, kernel, 2.0 * m * n * kc);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Case> cases = {{"cnn_conv1_100x32x32x1_5x5x16", 100, 32, 1, 16, 5},
                                   {"cnn_conv2_100x16x16x16_3x3x32", 100, 16, 16, 32, 3}};
  const std::pair<Direction, const char*> dirs[] = {{Direction::kForward, "forward"},
                                                    {Direction::kInputGrad, "input_grad"},
                                                    {Direction::kFilterGrad, "filter_grad"}};
  for (bool fixed : {false, true}) {
    for (const Case& c : cases) {
      for (const auto& [dir, dname] : dirs) {
        const std::string name =
            std::string(fixed ? "reproducible_conv_vs_sgemm/" : "conv_vs_sgemm/") + c.name + "/" +
            dname;
        benchmark::RegisterBenchmark(name.c_str(), BM_ConvVsSgemm, c, dir, fixed)->MinTime(0.5);
      }
    }
  }
  return mtf::bench::run_with_summary(
      argc, argv,
      "convolution kernel / cblas_sgemm on the equivalent GEMM shape, paired in the same run\n"
      "(target >= 0.70; reproducible_*: the fixed-order path, no target):");
}
