// The machine files of step_time's and decode_benchmark's --predict
// (bench/predict.h): one or several, each read before any step runs, and a
// clear error for an empty name or a file that cannot be read.
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

TEST(PredictFiles, OneOrSeveralInTheirOrder) {
  const std::string a = machine_file("predict_a.machine", 1e11),
                    b = machine_file("predict_b.machine", 2e11);
  EXPECT_EQ(bench::machine_files(a), std::vector<std::string>{a});
  EXPECT_EQ(bench::machine_files(b + "," + a), (std::vector<std::string>{b, a}));
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(PredictFiles, AnEmptyNameOrAnUnreadableFileIsAClearError) {
  const std::string a = machine_file("predict_c.machine", 1e11);
  testing::expect_error<ValueError>([&] { bench::machine_files(a + ",," + a); },
                                    "an empty machine file name",
                                    "give machine files separated by commas");
  testing::expect_error<ValueError>([&] { bench::machine_files(a + ","); },
                                    "an empty machine file name");
  testing::expect_error<IoError>(
      [&] { bench::machine_files(a + "," + ::testing::TempDir() + "no_such.machine"); },
      "no_such.machine", "cannot be opened");
  std::remove(a.c_str());
}

}  // namespace
}  // namespace mtf
