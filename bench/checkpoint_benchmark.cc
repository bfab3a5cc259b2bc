// Checkpoint save and restore of 1 GiB of variables against
// `dd if=/dev/zero of=FILE bs=64M count=16 conv=fdatasync` on the same disk,
// paired in the same run (the median of per-iteration ratios; ratio =
// dd time / mtf time, so 1.0 is as fast as dd). Targets (issue 6): save and
// restore >= 0.8, restore into a different layout >= 0.5.
// Files go to $MTF_BENCH_DIR (default: /var/tmp). Also the checksum every
// saved and restored byte goes through (CRC-32C), against memcpy of the
// same 64 MiB: the instruction path and the tables' (CPUs without SSE4.2).
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "mtf/mtf.h"
#include "paired.h"

namespace {

using namespace mtf;

constexpr int64_t kRows = 8192, kCols = 8192;  // 256 MiB of float32 per variable
constexpr int kVariables = 4;
constexpr double kBytes = static_cast<double>(kRows * kCols * 4 * kVariables);

std::string bench_dir() {
  const char* d = std::getenv("MTF_BENCH_DIR");
  return d ? d : "/var/tmp";
}

struct Model {
  Graph g;
  Mesh mesh{g, "mesh"};
  Model() {
    for (int i = 0; i < kVariables; ++i)
      get_variable(mesh, "w" + std::to_string(i), Shape({{"rows", kRows}, {"cols", kCols}}),
                   Initializer::uniform(-1.f, 1.f));
  }
};

MeshConfig config(const char* mesh, const char* layout) {
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  return c;
}

void dd() {
  const std::string cmd = "dd if=/dev/zero of=" + bench_dir() +
                          "/mtf_bench_dd bs=64M count=16 conv=fdatasync status=none";
  if (std::system(cmd.c_str()) != 0) std::abort();
}

void BM_Save(benchmark::State& state) {
  Model m;
  Session s(m.g, config("all:4", "rows:all"));
  const std::string path = bench_dir() + "/mtf_bench_ckpt.h5";
  mtf::bench::run_paired(
      state, dd, [&] { save_checkpoint(s, path, 1); }, kBytes, "GB/s");
}

void BM_Restore(benchmark::State& state, const char* mesh, const char* layout) {
  Model saved, restored;
  Session from(saved.g, config("all:4", "rows:all"));
  const std::string path = bench_dir() + "/mtf_bench_ckpt_restore.h5";
  save_checkpoint(from, path, 1);
  Session to(restored.g, config(mesh, layout));
  mtf::bench::run_paired(
      state, dd, [&] { restore_checkpoint(to, path); }, kBytes, "GB/s");
}

// ratio = memcpy time / checksum time.
void BM_Crc32c(benchmark::State& state, bool portable) {
  constexpr size_t kSize = size_t{64} << 20;
  std::vector<char> from(kSize, 1), to(kSize);
  for (size_t i = 0; i < kSize; i += 4096) from[i] = static_cast<char>(i >> 12);
  uint32_t sink = 0;
  mtf::bench::run_paired(
      state, [&] { std::memcpy(to.data(), from.data(), kSize); },
      [&] { sink ^= portable ? crc32c_portable(from.data(), kSize) : crc32c(from.data(), kSize); },
      static_cast<double>(kSize), "GB/s");
  benchmark::DoNotOptimize(sink);
  benchmark::DoNotOptimize(to.data());
}

}  // namespace

BENCHMARK_CAPTURE(BM_Crc32c, instruction, false)->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(BM_Crc32c, tables, true)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Save)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_Restore, same_layout, "all:4", "rows:all")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_Restore, other_layout, "all:8", "cols:all")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

int main(int argc, char** argv) {
  return mtf::bench::run_with_summary(
      argc, argv,
      "checkpoint / dd throughput (targets: save, restore >= 0.8; other layout >= 0.5); "
      "CRC-32C / memcpy");
}
