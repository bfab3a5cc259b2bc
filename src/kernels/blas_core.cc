#include "kernels/blas_core.h"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace mtf::kernels {
namespace {

bool same(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// Cores whose OpenBLAS kernels use AVX2 (or better).
bool has_avx2_kernels(const std::string& core) {
  for (const char* c : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator"})
    if (same(core, c)) return true;
  return false;
}

// Re-runs OpenBLAS's own core selection with OPENBLAS_CORETYPE=`core`.
// Only a DYNAMIC_ARCH build (Debian's) exports the two entry points; they
// are looked up at run time so that other builds still link.
bool switch_core(const std::string& core) {
  using Fn = void (*)();
  auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!quit || !init) return false;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  quit();
  init();
  return same(blas_core_name(), core.c_str());
}

BlasCoreCheck run_check() {
  BlasCoreCheck r;
  r.detected = r.active = blas_core_name();
  const char* env = std::getenv("MTF_BLAS_CORE");
  const std::string asked = env ? env : "";
  if (same(asked, "keep")) return r;
  const CpuVector cpu = cpu_vector_support();
  std::string want = asked.empty() ? better_blas_core(r.detected, cpu) : asked;
  if (want.empty() || same(r.detected, want.c_str())) return r;
  const bool switched = switch_core(want);
  r.active = blas_core_name();
  const std::string isa = cpu.avx512 ? "AVX-512" : "AVX2";
  if (!asked.empty()) {
    r.message = "mtf: OpenBLAS core " + r.active + " (MTF_BLAS_CORE=" + asked + ")" +
                (switched ? "" : "; OpenBLAS could not switch to it");
  } else if (switched) {
    r.message = "mtf: OpenBLAS chose its generic \"" + r.detected + "\" kernels on a CPU with " +
                isa + "; switched to \"" + r.active +
                "\" (about 3x faster GEMMs). MTF_BLAS_CORE=keep keeps OpenBLAS's choice, "
                "MTF_BLAS_CORE=<core> picks another.";
  } else {
    r.message = "mtf: OpenBLAS runs its generic \"" + r.detected + "\" kernels on a CPU with " +
                isa +
                " (about 3x slower GEMMs) and cannot switch at run time: start with "
                "OPENBLAS_CORETYPE=" +
                want + " set. MTF_BLAS_CORE=keep hides this line.";
  }
  std::fprintf(stderr, "%s\n", r.message.c_str());
  return r;
}

}  // namespace

CpuVector cpu_vector_support() {
  CpuVector v;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  v.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  v.avx512 = v.avx2_fma && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
#endif
  return v;
}

std::string better_blas_core(const std::string& core, const CpuVector& cpu) {
  if (!cpu.avx2_fma || has_avx2_kernels(core)) return "";
  return cpu.avx512 ? "SkylakeX" : "Haswell";
}

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

const BlasCoreCheck& check_blas_core() {
  static std::once_flag once;
  static BlasCoreCheck result;
  std::call_once(once, [] { result = run_check(); });
  return result;
}

}  // namespace mtf::kernels
