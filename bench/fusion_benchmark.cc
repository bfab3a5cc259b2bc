// What elementwise fusion (MeshConfig::fuse) buys: the same graph run by two
// Sessions in one process, one kernel per op (the reference) against fused
// chains (the candidate), paired step by step. "ratio" > 1 means fusion is
// faster. Cases: kernels alone (layer norm's tail, softmax's exp-sum,
// attention's masked row maxima), a layer norm forward and backward alone
// (elementwise and reductions only), the Transformer LM's training step at
// two sizes and the README MLP's step.
#include <cstdio>
#include <random>

#include "kernels/fused_elementwise.h"
#include "models/mlp.h"
#include "models/transformer.h"
#include "mtf/gradients.h"
#include "mtf/layers.h"
#include "paired.h"

namespace {

using namespace mtf;

MeshConfig with_fuse(bool fuse) {
  MeshConfig mc;
  mc.fuse = fuse;
  return mc;
}

// Layer norm's tail as one fused program: (x * r) * scale + bias and its
// square, outputs x * r, the sum and the square; `round`: each op stores
// bfloat16.
kernels::FusedExpr layer_norm_tail(bool round) {
  using K = kernels::FusedInstr::Kind;
  using kernels::BinaryFn;
  kernels::FusedExpr e;
  e.num_inputs = 4;
  for (int i = 0; i < 4; ++i) e.instrs.push_back({K::kInput, i});
  auto op = [&](BinaryFn fn, int p, int q) {
    kernels::FusedInstr in;
    in.kind = K::kBinary;
    in.binary = fn;
    in.a = p;
    in.b = q;
    in.round_bfloat16 = round;
    e.instrs.push_back(in);
  };
  op(BinaryFn::kMul, 0, 1);  // 4
  op(BinaryFn::kMul, 4, 2);  // 5
  op(BinaryFn::kAdd, 5, 3);  // 6
  kernels::FusedInstr sq;
  sq.kind = K::kUnary;
  sq.unary = kernels::UnaryFn::kSquare;
  sq.a = 6;
  sq.round_bfloat16 = round;
  e.instrs.push_back(sq);  // 7
  e.outputs = {4, 6, 7};
  return e;
}

// The kernels alone, on layer norm's tail: y = (x * r) * scale + bias and
// y^2, with x [rows, 512], r [rows], scale and bias [512], as four kernel
// calls against one fused call with the same three outputs.
void BM_KernelChain(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const Shape full = Shape("rows:" + std::to_string(rows) + ";d:512");
  HostTensor x(full, float32), r(Shape("rows:" + std::to_string(rows)), float32),
      scale(Shape("d:512"), float32), bias(Shape("d:512"), float32);
  for (HostTensor* t : {&x, &r, &scale, &bias})
    for (int64_t i = 0; i < t->num_elements(); ++i) t->data<float>()[i] = 0.5f + (i % 7) * 0.1f;
  HostTensor a(full, float32), b(full, float32), c(full, float32), d(full, float32);
  using kernels::BinaryFn;
  auto unfused = [&] {
    kernels::binary(BinaryFn::kMul, x, r, a);
    kernels::binary(BinaryFn::kMul, a, scale, b);
    kernels::binary(BinaryFn::kAdd, b, bias, c);
    kernels::unary(kernels::UnaryFn::kSquare, c, d);
  };
  const kernels::FusedExpr e = layer_norm_tail(false);
  auto fused = [&] { kernels::fused_elementwise(e, {&x, &r, &scale, &bias}, {&a, &c, &d}); };
  mtf::bench::run_paired(state, unfused, fused, static_cast<double>(full.num_elements()),
                         "Gelem/s");
}

// The same chain on bfloat16 tensors (each op's output rounded, as the
// bfloat16 graph's ops store it): one OpenMP thread (the reference) against
// two, and float32 on one thread (the reference) against bfloat16 on one.
void BM_KernelChainBfloat16(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const bool threads_case = state.range(1) == 2;
  const Shape full = Shape("rows:" + std::to_string(rows) + ";d:512");
  auto make = [&](DType dt, const Shape& s) {
    std::vector<float> v(static_cast<size_t>(s.num_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f + (i % 7) * 0.1f;
    return HostTensor::from_floats(s, v, dt);
  };
  const Shape row_shape("rows:" + std::to_string(rows)), d_shape("d:512");
  HostTensor x = make(mtf::bfloat16, full), r = make(mtf::bfloat16, row_shape),
             scale = make(mtf::bfloat16, d_shape), bias = make(mtf::bfloat16, d_shape);
  HostTensor a(full, mtf::bfloat16), c(full, mtf::bfloat16), d(full, mtf::bfloat16);
  HostTensor xf = make(float32, full), rf = make(float32, row_shape), sf = make(float32, d_shape),
             bf = make(float32, d_shape);
  HostTensor af(full, float32), cf(full, float32), df(full, float32);
  const kernels::FusedExpr e16 = layer_norm_tail(true), e32 = layer_norm_tail(false);
  auto bf16_on = [&](int threads) {
    kernels::fused_elementwise(e16, {&x, &r, &scale, &bias}, {&a, &c, &d}, false, threads);
  };
  auto f32 = [&] { kernels::fused_elementwise(e32, {&xf, &rf, &sf, &bf}, {&af, &cf, &df}); };
  if (threads_case) {
    mtf::bench::run_paired(
        state, [&] { bf16_on(1); }, [&] { bf16_on(2); }, static_cast<double>(full.num_elements()),
        "Gelem/s");
  } else {
    mtf::bench::run_paired(
        state, f32, [&] { bf16_on(1); }, static_cast<double>(full.num_elements()), "Gelem/s");
  }
}

// fn(x, y) over two inputs: instruction 2; `round`: it stores bfloat16.
kernels::FusedExpr binary_of_inputs(kernels::BinaryFn fn, bool round) {
  using K = kernels::FusedInstr::Kind;
  kernels::FusedExpr e;
  e.num_inputs = 2;
  e.instrs.push_back({K::kInput, 0});
  e.instrs.push_back({K::kInput, 1});
  kernels::FusedInstr op;
  op.kind = K::kBinary;
  op.binary = fn;
  op.a = 0;
  op.b = 1;
  op.round_bfloat16 = round;
  e.instrs.push_back(op);  // 2
  return e;
}

// exp(x - max) over two inputs, x and max: instructions 2 (the difference)
// and 3 (its exp); `round`: each op stores bfloat16.
kernels::FusedExpr exp_of_difference(bool round) {
  using K = kernels::FusedInstr::Kind;
  kernels::FusedExpr e = binary_of_inputs(kernels::BinaryFn::kSub, round);
  kernels::FusedInstr ex;
  ex.kind = K::kUnary;
  ex.unary = kernels::UnaryFn::kExp;
  ex.a = 2;
  ex.round_bfloat16 = round;
  e.instrs.push_back(ex);  // 3
  return e;
}

// `chain`'s kernel writing its value `at` into `values` and reduce() reading
// them back into `reduced`, against one fused call with the reduction (fn
// over `values`' shape) as its epilogue; paired, per element of `values`.
void run_against_epilogue(benchmark::State& state, kernels::FusedExpr chain, int at,
                          kernels::ReduceFn fn, const std::vector<const HostTensor*>& inputs,
                          HostTensor& values, HostTensor& reduced) {
  chain.outputs = {at};
  kernels::FusedExpr epilogue = chain;
  epilogue.outputs.clear();
  epilogue.reduce_of = at;
  epilogue.reduce_fn = fn;
  epilogue.reduce_space = values.shape();
  auto unfused = [&] {
    kernels::fused_elementwise(chain, inputs, {&values});
    kernels::reduce(fn, values, reduced);
  };
  auto fused = [&] { kernels::fused_elementwise(epilogue, inputs, {&reduced}); };
  mtf::bench::run_paired(state, unfused, fused, static_cast<double>(values.num_elements()),
                         "Gelem/s");
}

// softmax's denominator: sum over m of exp(x - max), x [b, h, l, m] and max
// [b, h, l].
void BM_ExpSum(benchmark::State& state) {
  const Shape full("b:8;h:8;l:128;m:" + std::to_string(state.range(0)));
  const Shape rows("b:8;h:8;l:128");
  HostTensor x(full, float32), mx(rows, float32), e(full, float32), sum(rows, float32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = -0.01f * (i % 97);
  for (int64_t i = 0; i < mx.num_elements(); ++i) mx.data<float>()[i] = 0.5f;
  run_against_epilogue(state, exp_of_difference(false), 3, kernels::ReduceFn::kSum, {&x, &mx}, e,
                       sum);
}

// Attention's masked row maxima: max over m of x + mask, x [b, l, h, m] and
// the causal mask [l, m] broadcast over b and h.
void BM_MaskedMax(benchmark::State& state) {
  const Shape full("b:16;l:128;h:8;m:128"), mask_shape("l:128;m:128"), rows("b:16;l:128;h:8");
  HostTensor x(full, float32), mask(mask_shape, float32), sum(full, float32), mx(rows, float32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = -0.01f * (i % 97);
  for (int64_t i = 0; i < mask.num_elements(); ++i)
    mask.data<float>()[i] = (i % 128) > (i / 128) ? -1e9f : 0.f;
  run_against_epilogue(state, binary_of_inputs(kernels::BinaryFn::kAdd, false), 2,
                       kernels::ReduceFn::kMax, {&x, &mask}, sum, mx);
}

// Attention's softmax denominator as the Transformer's bfloat16 step runs
// it: x [b, l, h, m] bfloat16 less its row maxima [b, l, h], exp stored
// bfloat16 (rounded) and summed over m in float32 by the epilogue; float32
// (the reference) against bfloat16, one thread.
void BM_ExpSumBfloat16(benchmark::State& state) {
  const Shape full("b:8;l:128;h:8;m:128");
  const Shape rows("b:8;l:128;h:8");
  auto expr = [&](bool round) {
    kernels::FusedExpr e = exp_of_difference(round);
    kernels::FusedInstr widen;  // 4: the float32 copy the sum reads
    widen.kind = kernels::FusedInstr::Kind::kUnary;
    widen.a = 3;
    e.instrs.push_back(widen);
    e.outputs = {3};
    e.reduce_of = 4;
    e.reduce_space = full;
    return e;
  };
  HostTensor x(full, float32), mx(rows, float32), ex(full, float32), sum(rows, float32);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = -0.01f * (i % 97);
  for (int64_t i = 0; i < mx.num_elements(); ++i) mx.data<float>()[i] = 0.5f;
  HostTensor x16 = x.as_dtype(mtf::bfloat16), mx16 = mx.as_dtype(mtf::bfloat16),
             ex16(full, mtf::bfloat16);
  const kernels::FusedExpr e32 = expr(false), e16 = expr(true);
  mtf::bench::run_paired(
      state,
      [&] {
        kernels::fused_elementwise(e32, {&x, &mx}, {&ex, &sum});
      },
      [&] {
        kernels::fused_elementwise(e16, {&x16, &mx16}, {&ex16, &sum});
      },
      static_cast<double>(full.num_elements()), "Gelem/s");
}

// layer_norm over d_model of [batch 16, length 128, d_model 512], then its
// gradients with respect to x, scale and bias.
void BM_LayerNorm(benchmark::State& state) {
  Graph g;
  Mesh mesh(g, "m");
  const Shape shape("batch:16;length:128;d_model:512");
  Tensor x = placeholder(mesh, shape, float32, "x");
  Tensor y = layers::layer_norm(x, shape.get("d_model"), "ln");
  Tensor loss = reduce_sum(square(y));
  std::vector<Tensor> wrt{x};
  for (const Tensor& v : g.trainable_variables()) wrt.push_back(v);
  std::vector<Tensor> fetches = gradients({loss}, wrt);
  fetches.push_back(loss);
  HostTensor xv(shape, float32);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < xv.num_elements(); ++i) xv.data<float>()[i] = (rng() % 1000) / 500.f;
  Session unfused(g, with_fuse(false)), fused(g, with_fuse(true));
  auto run = [&](Session& s) { benchmark::DoNotOptimize(s.run(fetches, {{x, xv}})); };
  mtf::bench::run_paired(
      state, [&] { run(unfused); }, [&] { run(fused); }, static_cast<double>(shape.num_elements()),
      "Gelem/s");
}

void BM_TransformerStep(benchmark::State& state) {
  models::TransformerConfig cfg;
  if (state.range(0) == 512) {
    cfg.d_model = 512;
    cfg.d_ff = 2048;
    cfg.heads = 8;
    cfg.d_kv = 64;
    cfg.batch = 8;
    cfg.length = 128;
  }
  models::TransformerLm lm(cfg);
  Session unfused(lm.graph(), with_fuse(false)), fused(lm.graph(), with_fuse(true));
  HostTensor in(lm.inputs.shape(), int32), tg(lm.targets.shape(), int32);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    in.data<int32_t>()[i] = static_cast<int32_t>(rng() % cfg.vocab);
    tg.data<int32_t>()[i] = static_cast<int32_t>(rng() % cfg.vocab);
  }
  // Both sessions train the one set of variables: each step is the same work.
  auto run = [&](Session& s) {
    benchmark::DoNotOptimize(s.run({lm.loss}, {{lm.inputs, in}, {lm.targets, tg}}, lm.train_ops));
  };
  mtf::bench::run_paired(
      state, [&] { run(unfused); }, [&] { run(fused); }, 1.0, "steps/s");
}

void BM_MlpStep(benchmark::State& state) {
  models::MlpConfig config;
  config.batch_size = state.range(0);
  models::Mlp mlp(config);
  Session unfused(mlp.graph(), with_fuse(false)), fused(mlp.graph(), with_fuse(true));
  std::mt19937 rng(1);
  HostTensor images(mlp.images.shape(), float32), labels(mlp.labels.shape(), int32);
  for (int64_t i = 0; i < images.num_elements(); ++i)
    images.data<float>()[i] = (rng() % 256) / 255.f;
  for (int64_t i = 0; i < labels.num_elements(); ++i)
    labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  mtf::bench::run_paired(
      state, [&] { benchmark::DoNotOptimize(mlp.train_step(unfused, images, labels)); },
      [&] { benchmark::DoNotOptimize(mlp.train_step(fused, images, labels)); }, 1.0, "steps/s");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("kernel_chain/rows", BM_KernelChain)
      ->Arg(64)     // 128 KiB per tensor: in L2
      ->Arg(2048)   // 4 MiB: in L3
      ->Arg(16384)  // 32 MiB: memory
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::RegisterBenchmark("kernel_chain_bfloat16/rows/case", BM_KernelChainBfloat16)
      ->Args({2048, 1})  // float32 (reference) against bfloat16, one thread
      ->Args({2048, 2})  // bfloat16: one thread (reference) against two
      ->Args({16384, 1})
      ->Args({16384, 2})
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::RegisterBenchmark("exp_sum/m", BM_ExpSum)
      ->Arg(128)   // 4 MiB of exp's values
      ->Arg(1024)  // 32 MiB
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::RegisterBenchmark("masked_max", BM_MaskedMax)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::RegisterBenchmark("exp_sum_bfloat16", BM_ExpSumBfloat16)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(1.0);
  benchmark::RegisterBenchmark("layer_norm_fwd_bwd", BM_LayerNorm)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2.0);
  benchmark::RegisterBenchmark("transformer_step/d128", BM_TransformerStep)
      ->Arg(128)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(4.0);
  benchmark::RegisterBenchmark("transformer_step/d512", BM_TransformerStep)
      ->Arg(512)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(12);
  benchmark::RegisterBenchmark("mlp_step/b100", BM_MlpStep)
      ->Arg(100)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2.0);
  return mtf::bench::run_with_summary(argc, argv,
                                      "unfused time / fused time (> 1: fusion is faster)");
}
