// A training step of the Transformer LM (examples/transformer_lm) on one
// core and on an in-process 2x2 mesh, against its dense layers' GEMMs called
// directly through cblas_sgemm in the same run (forward, input gradient and
// weight gradient of every projection: q, k, v, o, wi, wo, logits).
//
// "ratio" is the fraction of that sgemm rate the step's matmul FLOPs reach:
// (all einsum FLOPs of the step / step time) / (GEMM FLOPs / GEMM time).
// The remainder is attention's small batched products, elementwise work,
// layer norms, softmax, the optimizer and per-op overhead.
#include <cblas.h>

#include <cstdio>
#include <random>

#include "models/transformer.h"
#include "paired.h"

namespace {

using namespace mtf;

models::TransformerConfig config_at(int64_t d_model) {
  models::TransformerConfig c;
  c.layers = 2;
  c.d_model = d_model;
  c.d_ff = 4 * d_model;
  c.heads = 8;
  c.d_kv = d_model / 8;
  c.length = 128;
  c.batch = 8;
  return c;
}

// Einsum FLOPs of the whole graph: forward, backward and the evaluation
// copy, which shares the forward's ops when dropout is off.
double einsum_flops(const Graph& g) {
  double f = 0;
  for (const auto& op : g.operations())
    if (op->type() == "einsum") f += op->flops();
  return f;
}

void BM_TransformerStep(benchmark::State& state) {
  const int64_t d_model = state.range(0);
  const bool mesh = state.range(1) != 0;
  const models::TransformerConfig cfg = config_at(d_model);
  models::TransformerLm lm(cfg);
  MeshConfig mc;
  if (mesh) {
    mc.mesh_shape = MeshShape("rows:2;cols:2");
    mc.layout = LayoutRules("batch:rows;heads:cols;d_ff:cols;vocab:cols");
  }
  Session session(lm.graph(), mc);
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    in.data<int32_t>()[i] = static_cast<int32_t>(rng() % 256);
    tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % 256);
  }
  auto step = [&] {
    benchmark::DoNotOptimize(
        session.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops));
  };
  // The dense projections' GEMMs on [tokens, in] x [in, out].
  const int t = static_cast<int>(cfg.batch * cfg.length), d = static_cast<int>(d_model),
            f = static_cast<int>(cfg.d_ff), v = static_cast<int>(cfg.vocab);
  struct Gemm {
    int in, out;
  };
  std::vector<Gemm> shapes;
  for (int64_t l = 0; l < cfg.layers; ++l) {
    for (int k = 0; k < 4; ++k) shapes.push_back({d, d});  // q, k, v, o (heads * d_kv = d)
    shapes.push_back({d, f});
    shapes.push_back({f, d});
  }
  shapes.push_back({d, v});
  std::vector<float> x(size_t(t) * f, 0.5f), w(size_t(f) * f, 0.01f), y(size_t(t) * f),
      dy(size_t(t) * f, 0.1f);
  double gemm_flops = 0;
  for (const Gemm& s : shapes) gemm_flops += 3 * 2.0 * t * s.in * s.out;
  const auto N = CblasNoTrans, T = CblasTrans;
  auto gemms = [&] {
    for (const Gemm& s : shapes) {
      cblas_sgemm(CblasRowMajor, N, N, t, s.out, s.in, 1.f, x.data(), s.in, w.data(), s.out, 0.f,
                  y.data(), s.out);
      cblas_sgemm(CblasRowMajor, N, T, t, s.in, s.out, 1.f, dy.data(), s.out, w.data(), s.out, 0.f,
                  x.data(), s.in);
      cblas_sgemm(CblasRowMajor, T, N, s.in, s.out, t, 1.f, x.data(), s.in, dy.data(), s.out, 0.f,
                  w.data(), s.out);
    }
    benchmark::DoNotOptimize(w.data());
  };
  const double step_flops = einsum_flops(lm.graph());
  mtf::bench::run_paired(state, gemms, step, step_flops, "matmul_GFLOP/s");
  // run_paired's ratio is gemm time / step time; scale it to rates.
  state.counters["ratio"] = state.counters["ratio"] * step_flops / gemm_flops;
  state.counters["ref_matmul_GFLOP/s"] =
      state.counters["ref_matmul_GFLOP/s"] * gemm_flops / step_flops;
  state.counters["ms_per_step"] = 1e3 * step_flops / (state.counters["matmul_GFLOP/s"] * 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("transformer_step_one_core", BM_TransformerStep)
      ->Args({512, 0})
      ->Args({256, 0})
      ->MinTime(3.0)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("transformer_step_2x2_mesh", BM_TransformerStep)
      ->Args({512, 1})
      ->MinTime(3.0)
      ->Unit(benchmark::kMillisecond);
  return mtf::bench::run_with_summary(
      argc, argv,
      "Transformer LM training step: its matmul FLOP rate as a fraction of direct sgemm on its\n"
      "dense layers' GEMMs, paired in the same run (target: >= 0.5 on one core at d_model 512):");
}
