#include "kernels/vector_math.h"

namespace mtf::kernels {
namespace {

// One loop, compiled three times; the CPU picks once.
#define MTF_EXP_LOOP \
  for (int64_t i = 0; i < n; ++i) y[i] = exp_lane(x[i]);

__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma"))) void exp_avx512(
    const float* x, float* y, int64_t n) {
  MTF_EXP_LOOP
}
__attribute__((target("avx2,fma"))) void exp_avx2(const float* x, float* y, int64_t n) {
  MTF_EXP_LOOP
}
void exp_generic(const float* x, float* y, int64_t n) { MTF_EXP_LOOP }
#undef MTF_EXP_LOOP

using ExpFn = void (*)(const float*, float*, int64_t);
ExpFn pick_exp() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
    return exp_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return exp_avx2;
  return exp_generic;
}

}  // namespace

void exp_array(const float* x, float* y, int64_t n) {
  static const ExpFn fn = pick_exp();
  fn(x, y, n);
}

}  // namespace mtf::kernels
