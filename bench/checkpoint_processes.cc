// One rank of a multi-process checkpoint save benchmark: 1 GiB of variables
// (four 8192x8192 float32 tensors, each split over every rank, so each rank
// owns 1/n of the bytes) saved by every rank, alternating the two ways a job
// writes (SaveOptions::Files): per-rank part files at once, and one file in
// turn. Each save is fsync'd (part of save_checkpoint); files are removed
// between saves, outside the timing. The first save of each way warms up
// (a fresh process's first large write is several times slower) and is not
// counted. Rank 0 prints each save, the medians
// and their ratio (in turn / per rank: above 1 means part files are faster).
// Usage: mtf-launch -n 4 -- checkpoint_processes [DIR] [ROUNDS]
// (DIR defaults to $MTF_BENCH_DIR or /var/tmp; run under mpirun for MPI.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace {

using namespace mtf;
using Clock = std::chrono::steady_clock;

constexpr int64_t kRows = 8192, kCols = 8192;  // 256 MiB of float32 per variable
constexpr int kVariables = 4;
constexpr double kBytes = static_cast<double>(kRows * kCols * 4 * kVariables);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_dir = std::getenv("MTF_BENCH_DIR");
  const std::string dir = argc > 1 ? argv[1] : env_dir ? env_dir : "/var/tmp";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  try {
    std::string transport_name;
    std::shared_ptr<Transport> job = connect_process_transport("auto", &transport_name);
    if (!job) {
      std::fprintf(stderr, "checkpoint_processes: run it under mtf-launch or mpirun\n");
      return 2;
    }
    const int rank = job->rank(), n = job->size();
    Graph g;
    Mesh mesh(g, "mesh");
    for (int i = 0; i < kVariables; ++i)
      get_variable(mesh, "w" + std::to_string(i), Shape({{"rows", kRows}, {"cols", kCols}}),
                   Initializer::constant(0.5f + static_cast<float>(i)));
    MeshConfig c;
    c.mesh_shape = MeshShape("all:" + std::to_string(n));
    c.layout = LayoutRules("rows:all");
    c.process_transport = job;
    Session s(g, c);
    const Group all = Group::all(n, rank);
    uint64_t tag = 1;
    const std::string path = dir + "/mtf_bench_ckpt_processes.h5";
    std::vector<double> per_rank, in_turn;
    if (rank == 0) {
      std::printf("# %d ranks over %s, %.0f MiB, files in %s\n", n, transport_name.c_str(),
                  kBytes / (1 << 20), dir.c_str());
    }
    for (int round = 0; round < 2 * (rounds + 1); ++round) {
      SaveOptions o;
      o.files = round % 2 ? SaveOptions::Files::kOneFile : SaveOptions::Files::kPerRank;
      barrier(*job, all, ++tag);
      const Clock::time_point t0 = Clock::now();
      save_checkpoint(s, path, round, {}, o);
      barrier(*job, all, ++tag);
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (rank == 0) {
        const CheckpointInfo info = read_checkpoint_info(path);
        std::printf("%s%-9s %d ranks %zu files %.3f s %.2f GB/s\n", round < 2 ? "(warm-up) " : "",
                    round % 2 ? "in-turn" : "per-rank", n, info.files.size(), seconds,
                    kBytes / seconds / 1e9);
        std::fflush(stdout);
        for (const std::string& f : info.files) std::remove(f.c_str());
      }
      if (round >= 2) (round % 2 ? in_turn : per_rank).push_back(seconds);
    }
    barrier(*job, all, ++tag);
    if (rank == 0) {
      const double a = median(per_rank), b = median(in_turn);
      std::printf(
          "median per-rank %.3f s (%.2f GB/s), in-turn %.3f s (%.2f GB/s): "
          "per-rank is %.2fx the in-turn save\n",
          a, kBytes / a / 1e9, b, kBytes / b / 1e9, b / a);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "checkpoint_processes: %s\n", e.what());
    return 1;
  }
}
