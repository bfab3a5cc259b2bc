// The BLAS trap (src/kernels/blas_core.h): which cores count as generic, and
// — in the run CTest starts with OPENBLAS_CORETYPE=Prescott — that the check
// switches OpenBLAS to AVX2/AVX-512 kernels, says so in one line, and that
// GEMMs still give the right numbers.
#include "kernels/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "mtf/mtf.h"

namespace mtf {
namespace {

using kernels::better_blas_core;
using kernels::CpuVector;

TEST(BlasCoreTest, GenericCoresOnVectorCpusGetBetterKernels) {
  const CpuVector avx512{true, true}, avx2{true, false}, old{false, false};
  EXPECT_EQ(better_blas_core("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(better_blas_core("Prescott", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("Core2", avx2), "Haswell");
  EXPECT_EQ(better_blas_core("Sandybridge", avx512), "SkylakeX");  // AVX without AVX2
  EXPECT_EQ(better_blas_core("Prescott", old), "");                // nothing better to run
  for (const char* fine : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})
    EXPECT_EQ(better_blas_core(fine, avx512), "") << fine;
}

// Runs in every build; the switch itself only where CTest forced Prescott.
TEST(BlasCoreTest, ForcedGenericCoreIsReplacedAndSaid) {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const char* mtf_choice = std::getenv("MTF_BLAS_CORE");
  if (!forced || std::string(forced) != "Prescott" || mtf_choice)
    GTEST_SKIP() << "run by CTest with OPENBLAS_CORETYPE=Prescott";
  if (!kernels::cpu_vector_support().avx2_fma) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  testing::internal::CaptureStderr();
  const kernels::BlasCoreCheck& check = kernels::check_blas_core();
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(check.detected, "Prescott");
  EXPECT_EQ(check.active, kernels::cpu_vector_support().avx512 ? "SkylakeX" : "Haswell");
  EXPECT_EQ(kernels::blas_core_name(), check.active);
  EXPECT_NE(said.find("switched to \"" + check.active + "\""), std::string::npos) << said;
  EXPECT_NE(said.find("MTF_BLAS_CORE=keep"), std::string::npos) << said;
  EXPECT_EQ(said.find('\n'), said.size() - 1) << "one line: " << said;
  // A second check says nothing more.
  testing::internal::CaptureStderr();
  kernels::check_blas_core();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  // GEMMs on the new kernels give the right numbers.
  Graph g;
  Mesh mesh(g, "mesh");
  const Dimension m{"m", 67}, k{"k", 131}, n{"n", 45};
  HostTensor av(Shape({m, k}), float32), bv(Shape({k, n}), float32);
  for (int64_t i = 0; i < av.num_elements(); ++i) av.data<float>()[i] = float(i % 13) * 0.25f - 1;
  for (int64_t i = 0; i < bv.num_elements(); ++i) bv.data<float>()[i] = float(i % 7) * 0.5f - 1.5f;
  Tensor a = placeholder(mesh, av.shape(), float32, "a");
  Tensor b = placeholder(mesh, bv.shape(), float32, "b");
  Tensor c = einsum({a, b}, Shape({m, n}));
  Session session(g);
  const HostTensor cv = session.run(c, {{a, av}, {b, bv}});
  for (int64_t i = 0; i < m.size; ++i) {
    for (int64_t j = 0; j < n.size; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k.size; ++p)
        want += double(av.data<float>()[i * k.size + p]) * bv.data<float>()[p * n.size + j];
      ASSERT_NEAR(cv.data<float>()[i * n.size + j], want, 1e-3) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace mtf
