#include "kernels/gemm_bfloat16.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/gemm_fixed_order.h"

#ifdef MTF_HAVE_ONEDNN
#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace mtf::kernels {
namespace {

std::atomic<bool> forced_for_testing{false};

struct Native {
  bool native = false;
  std::string description;
};

const Native& native_state() {
  static const Native state = [] {
    Native s;
    const char* env = std::getenv("MTF_BFLOAT16_GEMM");
    const bool forced = env && std::strcmp(env, "float32") == 0;
    bool cpu = false;
#if defined(__x86_64__) && defined(__GNUC__)
    cpu = __builtin_cpu_supports("avx512bf16");
#endif
#ifdef MTF_HAVE_ONEDNN
    const bool built = true;
#else
    const bool built = false;
#endif
    if (forced) {
      s.description = "bfloat16 contractions on float32 copies (MTF_BFLOAT16_GEMM=float32)";
    } else if (!built) {
      s.description = "bfloat16 contractions on float32 copies (built without oneDNN)";
    } else if (!cpu) {
      s.description = "bfloat16 contractions on float32 copies (this CPU has no AVX512-BF16)";
    } else {
      s.native = true;
      s.description = "bfloat16 contractions on AVX512-BF16 (oneDNN matmul)";
    }
    return s;
  }();
  return state;
}

#ifdef MTF_HAVE_ONEDNN

// A call's shapes and strides, and the threads it runs on: oneDNN divides a
// matmul's work for the threads in force when the primitive is made, so a
// primitive made for one count runs as that many on any other.
using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, bool, int64_t, int64_t, int64_t, int64_t, int>;

Key key_of(const Bfloat16Gemm& g, int threads) {
  return Key(g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.stride_a, g.stride_b,
             g.stride_c, g.c_bfloat16, g.outer, g.outer_a, g.outer_b, g.outer_c, threads);
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A [batch, rows, cols] view of matrices stored row-major (or transposed),
// [outer, batch, rows, cols] when there is an outer batch axis.
dnnl::memory::desc view(int64_t outer, int64_t outer_stride, int64_t batch, int64_t rows,
                        int64_t cols, int64_t ld, bool trans, int64_t batch_stride,
                        dnnl::memory::data_type dt) {
  const int64_t rs = trans ? 1 : ld, cs = trans ? ld : 1;
  const int64_t bs = batch > 1 ? batch_stride : rows * cols;
  if (outer > 1)
    return dnnl::memory::desc({outer, batch, rows, cols}, dt, {outer_stride, bs, rs, cs});
  return dnnl::memory::desc({batch, rows, cols}, dt, {bs, rs, cs});
}

// One call's matmul and its operands' layouts.
struct Prepared {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul matmul;
};

// The matmul for one call's shapes on `threads` OpenMP threads (in force:
// set by the caller), made once per process and reused by every rank
// (oneDNN primitives may run from several threads at once); null when
// oneDNN has none for these strides.
const Prepared* prepared(const Bfloat16Gemm& g, int threads) {
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Prepared>> cache;
  const Key key = key_of(g, threads);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  using dt = dnnl::memory::data_type;
  const auto a = view(g.outer, g.outer_a, g.batch, g.m, g.k, g.lda, g.ta, g.stride_a, dt::bf16);
  const auto b = view(g.outer, g.outer_b, g.batch, g.k, g.n, g.ldb, g.tb, g.stride_b, dt::bf16);
  const auto c = view(g.outer, g.outer_c, g.batch, g.m, g.n, g.ldc, false, g.stride_c,
                      g.c_bfloat16 ? dt::bf16 : dt::f32);
  std::unique_ptr<Prepared> made;
  try {
    // Scratch memory passed in by each call, so that ranks on different
    // threads may run one primitive at once.
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
    made = std::make_unique<Prepared>(Prepared{a, b, c, pd.scratchpad_desc(), dnnl::matmul(pd)});
  } catch (const dnnl::error&) {
    // A layout oneDNN does not take (remembered as such): float32 instead.
  }
  const Prepared* ref = made.get();
  cache.emplace(key, std::move(made));
  return ref;
}

#endif

// The product on the fixed-order float32 kernel, reading bfloat16 as it
// packs (reproducible mode, machines without the instructions, layouts
// oneDNN does not take): matrices of a batch on separate threads when there
// are enough of them, else each one's row blocks.
void gemm_fixed(const Bfloat16Gemm& g, const uint16_t* a, const uint16_t* b, void* c) {
  const int threads = bfloat16_kernel_threads();
  // Matrix i of the grid, outer row i / batch.
  auto one = [&](int64_t i, int inner) {
    const int64_t o = i / g.batch, j = i % g.batch;
    const int64_t at_c = o * g.outer_c + j * g.stride_c;
    void* ci = g.c_bfloat16 ? static_cast<void*>(static_cast<uint16_t*>(c) + at_c)
                            : static_cast<void*>(static_cast<float*>(c) + at_c);
    gemm_fixed_order_bfloat16(g.ta, g.tb, g.m, g.n, g.k, a + o * g.outer_a + j * g.stride_a, g.lda,
                              b + o * g.outer_b + j * g.stride_b, g.ldb, ci, g.c_bfloat16, g.ldc,
                              inner);
  };
  const int64_t matrices = g.outer * g.batch;
  if (threads > 1 && matrices >= threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < matrices; ++i) one(i, 1);
    return;
  }
  for (int64_t i = 0; i < matrices; ++i) one(i, threads);
}

// One stored matrix (rows of `cols` elements, `ld` apart) widened to a
// dense float32 one; skipped when it is the matrix widened last (a
// broadcast operand, read by every matrix of the grid).
const float* widened(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld,
                     std::vector<float>& dst, const uint16_t*& last) {
  if (src != last) {
    dst.resize(static_cast<size_t>(rows * cols));
    if (ld == cols) {
      bfloat16_to_floats(src, dst.data(), rows * cols);
    } else {
      for (int64_t r = 0; r < rows; ++r)
        bfloat16_to_floats(src + r * ld, dst.data() + r * cols, cols);
    }
    last = src;
  }
  return dst.data();
}

// Fast mode without the instructions: each matrix of A and B widened to
// float32 (exact) just before its product, which OpenBLAS's sgemm — float32
// mode's own kernel — computes; a bfloat16 C is summed in float32 and
// rounded once. (The fixed-order kernel is 10-30% slower than OpenBLAS on
// some CPUs, an Intel Xeon with AVX-512 among them.) k > 0.
void gemm_widened(const Bfloat16Gemm& g, const uint16_t* a, const uint16_t* b, void* c) {
  const int64_t rows_a = g.ta ? g.k : g.m, cols_a = g.ta ? g.m : g.k;
  const int64_t rows_b = g.tb ? g.n : g.k, cols_b = g.tb ? g.k : g.n;
  thread_local std::vector<float> wa, wb, wc;
  const uint16_t* last_a = nullptr;
  const uint16_t* last_b = nullptr;
  if (g.c_bfloat16) wc.resize(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.outer * g.batch; ++i) {
    const int64_t o = i / g.batch, j = i % g.batch;
    const float* ai =
        widened(a + o * g.outer_a + j * g.stride_a, rows_a, cols_a, g.lda, wa, last_a);
    const float* bi =
        widened(b + o * g.outer_b + j * g.stride_b, rows_b, cols_b, g.ldb, wb, last_b);
    const int64_t at_c = o * g.outer_c + j * g.stride_c;
    float* ci = g.c_bfloat16 ? wc.data() : static_cast<float*>(c) + at_c;
    const int64_t ldc = g.c_bfloat16 ? g.n : g.ldc;
    cblas_sgemm(CblasRowMajor, g.ta ? CblasTrans : CblasNoTrans, g.tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, ai,
                static_cast<int>(cols_a), bi, static_cast<int>(cols_b), 0.0f, ci,
                static_cast<int>(ldc));
    if (g.c_bfloat16) {
      uint16_t* out = static_cast<uint16_t*>(c) + at_c;
      for (int64_t r = 0; r < g.m; ++r) floats_to_bfloat16(ci + r * g.n, out + r * g.ldc, g.n);
    }
  }
}

}  // namespace

bool bfloat16_gemm_native() {
  static const bool said = [] {
    const Native& s = native_state();
    const char* env = std::getenv("MTF_BFLOAT16_GEMM");
    if (!s.native && !env) std::fprintf(stderr, "mtf: %s\n", s.description.c_str());
    return true;
  }();
  (void)said;
  return native_state().native && !forced_for_testing.load();
}

bool force_bfloat16_gemm_float32(bool forced) { return forced_for_testing.exchange(forced); }

int bfloat16_kernel_threads() { return std::max(1, openblas_get_num_threads()); }

const char* bfloat16_gemm_description() { return native_state().description.c_str(); }

void gemm_bfloat16(const Bfloat16Gemm& g, const void* a, const void* b, void* c) {
  if (g.m == 0 || g.n == 0 || g.batch == 0 || g.outer == 0) return;
#ifdef MTF_HAVE_ONEDNN
  const bool native = !g.fixed_order && g.k > 0 && bfloat16_gemm_native();
  // Threads as OpenBLAS would use them: its count is what BlasThreadsShare
  // divides between ranks computing at once.
  const int threads = bfloat16_kernel_threads();
  if (native) omp_set_num_threads(threads);
  const Prepared* p = native ? prepared(g, threads) : nullptr;
  if (p) {
    thread_local dnnl::stream stream(engine());
    dnnl::memory ma(p->a, engine(), const_cast<void*>(a));
    dnnl::memory mb(p->b, engine(), const_cast<void*>(b));
    dnnl::memory mc(p->c, engine(), c);
    thread_local std::vector<char> scratch;
    scratch.resize(std::max<size_t>(scratch.size(), p->scratch.get_size()));
    dnnl::memory ms(p->scratch, engine(), scratch.data());
    p->matmul.execute(stream, {{DNNL_ARG_SRC, ma},
                               {DNNL_ARG_WEIGHTS, mb},
                               {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}});
    stream.wait();
    return;
  }
#endif
  const auto* a16 = static_cast<const uint16_t*>(a);
  const auto* b16 = static_cast<const uint16_t*>(b);
  if (g.fixed_order || g.k == 0) return gemm_fixed(g, a16, b16, c);
  gemm_widened(g, a16, b16, c);
}

}  // namespace mtf::kernels
