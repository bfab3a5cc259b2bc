// One rank of an allreduce benchmark across processes: float32 sum, 4 B to
// 64 MiB, time per call (median of five batches) and algorithm bandwidth
// (bytes / time), printed by rank 0 as "impl ranks bytes microseconds GB/s". Implementations:
//   mtf-tcp   mtf's ring allreduce over its TCP transport   (under mtf-launch)
//   mtf-mpi   mtf's ring allreduce over its MPI transport   (under mpirun)
//   mpi       OpenMPI's MPI_Allreduce                       (under mpirun; choose
//             its TCP or shared-memory transport with --mca btl)
//   gloo      Gloo's ring allreduce over its TCP transport  (under mtf-launch;
//             rendezvous through files in $GLOO_STORE_DIR)
// bench/compare_allreduce.sh runs them all and writes the table.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef MTF_BENCH_GLOO
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#endif

#include "mtf/collectives.h"
#include "mtf/mpi_transport.h"
#include "mtf/tcp_transport.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Impl {
  int rank = 0, size = 1;
  std::function<void(float*, int64_t)> allreduce;
  std::function<void()> barrier;
};

#ifdef MTF_BENCH_GLOO
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const std::string impl = argc > 1 ? argv[1] : "";
  const int64_t max_bytes = argc > 2 ? std::atoll(argv[2]) : (int64_t{64} << 20);
  // `has gloo`: exit 0 when this build has Gloo (the script's probe).
  if (impl == "has") {
#ifdef MTF_BENCH_GLOO
    return argc > 2 && std::string(argv[2]) == "gloo" ? 0 : 1;
#else
    return 1;
#endif
  }
  Impl im;
  std::unique_ptr<mtf::Transport> transport;
  uint64_t tag = 1;
  bool mpi_inited = false;
#ifdef MTF_BENCH_GLOO
  std::shared_ptr<gloo::rendezvous::Context> gloo_ctx;
#endif
  try {
    if (impl == "mtf-tcp" || impl == "mtf-mpi") {
      transport = impl == "mtf-tcp" ? mtf::connect_tcp(mtf::TcpOptions::from_environment())
                                    : mtf::connect_mpi();
      im.rank = transport->rank();
      im.size = transport->size();
      const mtf::Group g = mtf::Group::all(im.size, im.rank);
      im.allreduce = [&, g](float* x, int64_t n) {
        mtf::allreduce(*transport, g, x, n, mtf::float32, mtf::ReduceOp::kSum, ++tag);
      };
      im.barrier = [&, g] { mtf::barrier(*transport, g, ++tag); };
    } else if (impl == "mpi") {
      MPI_Init(&argc, &argv);
      mpi_inited = true;
      MPI_Comm_rank(MPI_COMM_WORLD, &im.rank);
      MPI_Comm_size(MPI_COMM_WORLD, &im.size);
      im.allreduce = [](float* x, int64_t n) {
        MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      };
      im.barrier = [] { MPI_Barrier(MPI_COMM_WORLD); };
#ifdef MTF_BENCH_GLOO
    } else if (impl == "gloo") {
      im.rank = env_int("MTF_RANK");
      im.size = env_int("MTF_WORLD_SIZE");
      const char* dir = std::getenv("GLOO_STORE_DIR");
      if (!dir || im.rank < 0) {
        std::fprintf(stderr, "gloo: run under mtf-launch with GLOO_STORE_DIR set\n");
        return 2;
      }
      gloo::rendezvous::FileStore store(dir);
      gloo::transport::tcp::attr attr("127.0.0.1");
      auto device = gloo::transport::tcp::CreateDevice(attr);
      gloo_ctx = std::make_shared<gloo::rendezvous::Context>(im.rank, im.size);
      gloo_ctx->connectFullMesh(store, device);
      im.allreduce = [&](float* x, int64_t n) {
        gloo::AllreduceRing<float> op(gloo_ctx, {x}, static_cast<int>(n));
        op.run();
      };
      im.barrier = [&] {
        gloo::BarrierAllToOne b(gloo_ctx);
        b.run();
      };
#endif
    } else {
      std::fprintf(stderr, "usage: allreduce_processes mtf-tcp|mtf-mpi|mpi|gloo [max_bytes]\n");
      return 2;
    }
    {
      // Warm up first: the first sizes of a fresh job measured up to 3x
      // slower than later ones through the same algorithm.
      std::vector<float> x(256, 1.0f);
      for (int i = 0; i < 2000; ++i) im.allreduce(x.data(), 1 + i % 256);
      im.barrier();
    }
    for (int64_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
      const int64_t n = bytes / 4;
      std::vector<float> x(n, 1.0f);
      // Five timed batches; the median batch is reported (this VM's
      // neighbours make single batches differ by up to 2x).
      const int reps = static_cast<int>(std::clamp<int64_t>((int64_t{32} << 20) / bytes, 5, 2000));
      const int per_batch = std::max(1, reps / 5);
      for (int w = 0; w < 3; ++w) im.allreduce(x.data(), n);
      std::vector<double> batch;
      for (int b = 0; b < 5; ++b) {
        im.barrier();
        const auto t0 = Clock::now();
        for (int r = 0; r < per_batch; ++r) im.allreduce(x.data(), n);
        im.barrier();
        batch.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / per_batch);
      }
      std::sort(batch.begin(), batch.end());
      const double s = batch[2];
      if (im.rank == 0) {
        std::printf("%s %d %lld %.2f %.6g\n", impl.c_str(), im.size, static_cast<long long>(bytes),
                    s * 1e6, static_cast<double>(bytes) / s * 1e-9);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_processes (%s): %s\n", impl.c_str(), e.what());
    return 1;
  }
  transport.reset();
  if (mpi_inited) MPI_Finalize();
  return 0;
}
