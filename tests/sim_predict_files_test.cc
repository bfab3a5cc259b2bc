// The machines of step_time's and decode_benchmark's --predict
// (bench/predict.h): none, one or several files, each read before any step
// runs, and a clear error for an empty name or a file that cannot be read.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "mtf/mtf.h"
#include "predict.h"

namespace mtf {
namespace {

// A calibrated-looking host written to a temporary file.
std::string machine_file(const std::string& name, double gemm_flops) {
  Topology t;
  t.apply_overrides("name=host,network=switched,nodes=1,devices_per_node=2,host_cpus=2");
  t.set("gemm_flops", std::to_string(gemm_flops));
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << t.to_file();
  return path;
}

TEST(PredictFiles, NoneOneOrSeveralInTheirOrder) {
  const std::string a = machine_file("predict_a.machine", 1e11),
                    b = machine_file("predict_b.machine", 2e11);
  EXPECT_TRUE(bench::machines_to_predict("").empty());
  const std::vector<Topology> one = bench::machines_to_predict(a);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(one[0].host.one_cpu.gemm_flops, 1e11);
  const std::vector<Topology> two = bench::machines_to_predict(b + "," + a);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_DOUBLE_EQ(two[0].host.one_cpu.gemm_flops, 2e11);
  EXPECT_DOUBLE_EQ(two[1].host.one_cpu.gemm_flops, 1e11);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(PredictFiles, AnEmptyNameOrAnUnreadableFileIsAClearError) {
  const std::string a = machine_file("predict_c.machine", 1e11);
  testing::expect_error<ValueError>([&] { bench::machines_to_predict(a + ",," + a); },
                                    "an empty machine file name",
                                    "give machine files separated by commas");
  testing::expect_error<ValueError>([&] { bench::machines_to_predict(a + ","); },
                                    "an empty machine file name");
  testing::expect_error<IoError>(
      [&] { bench::machines_to_predict(a + "," + ::testing::TempDir() + "no_such.machine"); },
      "no_such.machine", "cannot be opened");
  std::remove(a.c_str());
}

}  // namespace
}  // namespace mtf
