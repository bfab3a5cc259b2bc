// einsum as matmul against a direct cblas_sgemm on the same shapes, in the
// same run: [1024,1024]x[1024,1024], the Fashion-MNIST MLP's einsums
// (forward and gradient) and the Transformer LM's at d_model 512 (dense
// projections forward, input and weight gradients; attention's batched
// products, against a loop of sgemms over contiguous [batch*heads] blocks). Prints GFLOP/s and the
// ratio einsum / sgemm, for the default kernels and for reproducible mode's fixed-order kernel.
#include <cblas.h>

#include <cstdio>

#include "kernels/gemm_bfloat16.h"
#include "mtf/mtf.h"
#include "paired.h"
#include "random_data.h"

namespace {

using namespace mtf;

struct Case {
  const char* name;
  std::vector<const char*> inputs;  // shapes of the einsum operands
  const char* output;
  // The equivalent row-major sgemm: C[m,n] = op(A) op(B).
  bool ta, tb;
  int m, n, k;
  int batch = 1;  // sgemm calls (attention: batch x heads)
};

// The MLP at batch b: x[b,rows,cols] w1[rows,cols,hidden] h[b,hidden] w2[hidden,classes].
std::vector<Case> cases() {
  return {
      {"square_1024",
       {"i:1024;k:1024", "k:1024;j:1024"},
       "i:1024;j:1024",
       false,
       false,
       1024,
       1024,
       1024},
      {"mlp_fwd1_100x784x1024",
       {"batch:100;rows:28;cols:28", "rows:28;cols:28;hidden:1024"},
       "batch:100;hidden:1024",
       false,
       false,
       100,
       1024,
       784},
      {"mlp_fwd2_100x1024x10",
       {"batch:100;hidden:1024", "hidden:1024;classes:10"},
       "batch:100;classes:10",
       false,
       false,
       100,
       10,
       1024},
      {"mlp_grad_w1_784x100x1024",
       {"batch:100;hidden:1024", "batch:100;rows:28;cols:28"},
       "rows:28;cols:28;hidden:1024",
       true,
       false,
       784,
       1024,
       100},
      {"mlp_grad_w2_1024x100x10",
       {"batch:100;classes:10", "batch:100;hidden:1024"},
       "hidden:1024;classes:10",
       true,
       false,
       1024,
       10,
       100},
      {"mlp_grad_h_100x10x1024",
       {"batch:100;classes:10", "hidden:1024;classes:10"},
       "batch:100;hidden:1024",
       false,
       true,
       100,
       1024,
       10},
      // Transformer LM, d_model 512, d_ff 2048, 8 heads x 64, batch 8 x 128.
      {"lm_ffn_wi_1024x2048x512",
       {"batch:8;length:128;d_model:512", "d_model:512;d_ff:2048"},
       "batch:8;length:128;d_ff:2048",
       false,
       false,
       1024,
       2048,
       512},
      {"lm_ffn_wi_grad_x_1024x512x2048",
       {"batch:8;length:128;d_ff:2048", "d_model:512;d_ff:2048"},
       "batch:8;length:128;d_model:512",
       false,
       true,
       1024,
       512,
       2048},
      {"lm_ffn_wi_grad_w_512x2048x1024",
       {"batch:8;length:128;d_model:512", "batch:8;length:128;d_ff:2048"},
       "d_model:512;d_ff:2048",
       true,
       false,
       512,
       2048,
       1024},
      {"lm_q_1024x512x512",
       {"batch:8;length:128;d_model:512", "d_model:512;heads:8;d_kv:64"},
       "batch:8;length:128;heads:8;d_kv:64",
       false,
       false,
       1024,
       512,
       512},
      {"lm_attention_logits_64x128x128x64",
       {"batch:8;length:128;heads:8;d_kv:64", "batch:8;memory_length:128;heads:8;d_kv:64"},
       "batch:8;length:128;heads:8;memory_length:128",
       false,
       true,
       128,
       128,
       64,
       64},
      {"lm_attention_values_64x128x64x128",
       {"batch:8;length:128;heads:8;memory_length:128",
        "batch:8;memory_length:128;heads:8;d_kv:64"},
       "batch:8;length:128;heads:8;d_kv:64",
       false,
       false,
       128,
       64,
       128,
       64},
  };
}

using mtf::bench::random_floats;
using mtf::bench::random_host;

// einsum through the public API (a Session run) against cblas_sgemm on the
// same shape, paired. reproducible: the Session's fixed-order kernel
// (MeshConfig::reproducible), whose cost this measures. dtype bfloat16: the
// operands and result in bfloat16 (oneDNN on AVX512-BF16 in fast mode, else
// the fixed-order kernel reading bfloat16) against float32 sgemm.
void BM_EinsumVsSgemm(benchmark::State& state, Case c, bool reproducible, DType dtype) {
  Graph g;
  Mesh mesh(g, "m");
  std::vector<Tensor> ins;
  Feeds feeds;
  uint32_t seed = 1;
  for (const char* s : c.inputs) {
    ins.push_back(placeholder(mesh, Shape(s), dtype, "in"));
    feeds.emplace_back(ins.back(), random_host(Shape(s), seed++).as_dtype(dtype));
  }
  Tensor out = einsum(ins, Shape(c.output));
  MeshConfig config;
  config.reproducible = reproducible;
  Session session(g, config);

  const size_t sa = static_cast<size_t>(c.m) * c.k, sb = static_cast<size_t>(c.k) * c.n,
               sc = static_cast<size_t>(c.m) * c.n;
  const std::vector<float> a = random_floats(sa * c.batch, 100),
                           b = random_floats(sb * c.batch, 101);
  std::vector<float> ref_out(sc * c.batch);
  const int lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
  auto sgemm = [&] {
    for (int i = 0; i < c.batch; ++i)
      cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                  c.m, c.n, c.k, 1.f, a.data() + i * sa, lda, b.data() + i * sb, ldb, 0.f,
                  ref_out.data() + i * sc, c.n);
    benchmark::DoNotOptimize(ref_out.data());
  };
  auto run = [&] { benchmark::DoNotOptimize(session.run(out, feeds)); };
  mtf::bench::run_paired(state, sgemm, run, 2.0 * c.m * c.n * c.k * c.batch);
}

// The fixed cost of one Session::run of a one-element einsum: what small
// einsums pay on top of their GEMM.
void BM_RunOverhead(benchmark::State& state) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor a = placeholder(mesh, Shape("i:1;k:1"), float32, "a");
  Tensor b = placeholder(mesh, Shape("k:1;j:1"), float32, "b");
  Tensor out = einsum({a, b}, Shape("i:1;j:1"));
  Feeds feeds = {{a, HostTensor::zeros(a.shape(), float32)},
                 {b, HostTensor::zeros(b.shape(), float32)}};
  Session session(g);
  for (auto _ : state) benchmark::DoNotOptimize(session.run(out, feeds));
}
BENCHMARK(BM_RunOverhead);

}  // namespace

int main(int argc, char** argv) {
  for (bool reproducible : {false, true}) {
    for (const Case& c : cases()) {
      const std::string name =
          std::string(reproducible ? "reproducible_einsum_vs_sgemm/" : "einsum_vs_sgemm/") + c.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_EinsumVsSgemm, c, reproducible, mtf::float32)
          ->MinTime(1.0);
    }
  }
  std::printf("%s\n", mtf::kernels::bfloat16_gemm_description());
  for (bool reproducible : {false, true}) {
    for (const Case& c : cases()) {
      if (std::string(c.name).rfind("lm_", 0) != 0) continue;  // the Transformer's shapes
      const std::string name = std::string(reproducible ? "bfloat16_reproducible_einsum_vs_sgemm/"
                                                        : "bfloat16_einsum_vs_sgemm/") +
                               c.name;
      benchmark::RegisterBenchmark(name.c_str(), BM_EinsumVsSgemm, c, reproducible, mtf::bfloat16)
          ->MinTime(1.0);
    }
  }
  return mtf::bench::run_with_summary(
      argc, argv,
      "einsum / cblas_sgemm throughput, same shapes, paired in the same run (target >= 0.90;\n"
      "reproducible_*: the fixed-order kernel of reproducible mode, no target; bfloat16_*:\n"
      "bfloat16 operands and result against float32 sgemm, the instructions' peak is 2x):");
}
