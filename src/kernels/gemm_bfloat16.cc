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
      s.description = "bfloat16 contractions in float32 arithmetic (MTF_BFLOAT16_GEMM=float32)";
    } else if (!built) {
      s.description = "bfloat16 contractions in float32 arithmetic (built without oneDNN)";
    } else if (!cpu) {
      s.description = "bfloat16 contractions in float32 arithmetic (this CPU has no AVX512-BF16)";
    } else {
      s.native = true;
      s.description = "bfloat16 contractions on AVX512-BF16 (oneDNN matmul)";
    }
    return s;
  }();
  return state;
}

#ifdef MTF_HAVE_ONEDNN

using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, bool>;

Key key_of(const Bfloat16Gemm& g) {
  return Key(g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch, g.stride_a, g.stride_b,
             g.stride_c, g.c_bfloat16);
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A [batch, rows, cols] view of a matrix stored row-major (or transposed).
dnnl::memory::desc view(int64_t batch, int64_t rows, int64_t cols, int64_t ld, bool trans,
                        int64_t batch_stride, dnnl::memory::data_type dt) {
  const int64_t rs = trans ? 1 : ld, cs = trans ? ld : 1;
  return dnnl::memory::desc({batch, rows, cols}, dt,
                            {batch > 1 ? batch_stride : rows * cols, rs, cs});
}

// One call's matmul and its operands' layouts.
struct Prepared {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul matmul;
};

// The matmul for one call's shapes, made once per process and reused by
// every rank (oneDNN primitives may run from several threads at once); null
// when oneDNN has none for these strides.
const Prepared* prepared(const Bfloat16Gemm& g) {
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Prepared>> cache;
  const Key key = key_of(g);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  using dt = dnnl::memory::data_type;
  const auto a = view(g.batch, g.m, g.k, g.lda, g.ta, g.stride_a, dt::bf16);
  const auto b = view(g.batch, g.k, g.n, g.ldb, g.tb, g.stride_b, dt::bf16);
  const auto c =
      view(g.batch, g.m, g.n, g.ldc, false, g.stride_c, g.c_bfloat16 ? dt::bf16 : dt::f32);
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

// One matrix of a batch in float32: rows x cols, dense row-major.
std::vector<float> widened(const uint16_t* x, int64_t rows, int64_t cols, int64_t ld, bool trans) {
  std::vector<float> r(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const uint16_t v = trans ? x[j * ld + i] : x[i * ld + j];
      bfloat16_to_floats(&v, &r[static_cast<size_t>(i * cols + j)], 1);
    }
  return r;
}

// The same product through float32 copies and OpenBLAS (layouts oneDNN does
// not take).
void gemm_widened(const Bfloat16Gemm& g, const uint16_t* a, const uint16_t* b, void* c) {
  for (int64_t i = 0; i < g.batch; ++i) {
    const std::vector<float> wa = widened(a + i * g.stride_a, g.m, g.k, g.lda, g.ta);
    const std::vector<float> wb = widened(b + i * g.stride_b, g.k, g.n, g.ldb, g.tb);
    std::vector<float> wc(static_cast<size_t>(g.m * g.n));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m),
                static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, wa.data(),
                static_cast<int>(g.k), wb.data(), static_cast<int>(g.n), 0.0f, wc.data(),
                static_cast<int>(g.n));
    for (int64_t r = 0; r < g.m; ++r) {
      const float* row = wc.data() + r * g.n;
      const int64_t at = i * g.stride_c + r * g.ldc;
      if (g.c_bfloat16) {
        floats_to_bfloat16(row, static_cast<uint16_t*>(c) + at, g.n);
      } else {
        std::copy(row, row + g.n, static_cast<float*>(c) + at);
      }
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

int bfloat16_kernel_threads() {
  return bfloat16_gemm_native() ? std::max(1, openblas_get_num_threads()) : 1;
}

const char* bfloat16_gemm_description() { return native_state().description.c_str(); }

void gemm_bfloat16(const Bfloat16Gemm& g, const void* a, const void* b, void* c) {
  MTF_CHECK(bfloat16_gemm_native());
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
#ifdef MTF_HAVE_ONEDNN
  if (const Prepared* p = g.k > 0 ? prepared(g) : nullptr) {
    // Threads as OpenBLAS would use them: its count is what BlasThreadsShare
    // divides between ranks computing at once.
    omp_set_num_threads(openblas_get_num_threads());
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
  gemm_widened(g, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c);
}

}  // namespace mtf::kernels
