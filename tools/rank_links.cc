// Latency and bandwidth between ranks; see rank_links.h.
#include "rank_links.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "calibration_timing.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf::tools {
namespace {

constexpr int64_t kAllreduceFloats = kLinkAllreduceBytes / 4;

// Run by every rank of a world of 2 or more ranks, in pairs (r, r + n/2)
// all timing at once; rank 0's figures count. Fixed repetition counts, so
// that every pair makes the same calls.
LinkTimes time_link(Transport& t) {
  const int half = t.size() / 2;
  const int peer = t.rank() < half ? t.rank() + half : t.rank() - half;
  const bool first = t.rank() < half;
  uint64_t tag = 1;
  LinkTimes r;
  char byte = 0;
  constexpr int kRoundTrips = 200;
  std::vector<double> trips;
  for (int batch = 0; batch < 7; ++batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kRoundTrips; ++i, ++tag) {
      if (first) {
        t.send(peer, tag, &byte, 1);
        t.recv(peer, tag, &byte, 1);
      } else {
        t.recv(peer, tag, &byte, 1);
        t.send(peer, tag, &byte, 1);
      }
    }
    trips.push_back(seconds_since(t0) / kRoundTrips);
  }
  std::sort(trips.begin(), trips.end());
  r.latency = trips[trips.size() / 2] / 2;
  std::vector<float> data(kAllreduceFloats, 1.f);
  Group g;
  g.ranks = {std::min(t.rank(), peer), std::max(t.rank(), peer)};
  g.index = first ? 0 : 1;
  r.allreduce = time_median(
      [&] {
        allreduce(t, g, data.data(), kAllreduceFloats, float32, ReduceOp::kSum, tag++);
        std::fill(data.begin(), data.end(), 1.f);  // keep the sums finite
      },
      9, 0);
  return r;
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw IoError("calibration: cannot open a socket to find a free port");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    throw IoError("calibration: cannot bind a loopback socket to find a free port");
  }
  const int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace

double LinkTimes::bandwidth() const {
  return kLinkAllreduceBytes / std::max(allreduce - 2 * latency, 1e-9);
}

// Two ranks as threads, or 2 * cpus of them (more ranks than CPUs).
LinkTimes link_between_threads(int ranks) {
  LinkTimes r;
  run_in_process(
      ranks,
      [&](Transport& t) {
        const LinkTimes mine = time_link(t);
        if (t.rank() == 0) r = mine;
      },
      RankExecution::kPool);
  return r;
}

// Ranks connected as processes of one machine would be (TCP set-up,
// shared-memory rings), here in threads: 2, or 2 * cpus.
LinkTimes link_between_processes(int ranks, bool shared_memory) {
  const std::string coordinator = "127.0.0.1:" + std::to_string(free_loopback_port());
  LinkTimes r;
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        TcpOptions o;
        o.source = "mtf-sim --calibrate";
        o.rank = rank;
        o.world_size = ranks;
        o.local_rank = rank;
        o.local_size = ranks;
        o.coordinator = coordinator;
        o.listen_host = "127.0.0.1";
        o.token = "calibration-" + std::to_string(getpid());
        o.timeout = std::chrono::milliseconds(30000);
        o.connect_timeout = std::chrono::milliseconds(30000);
        o.shared_memory = shared_memory;
        std::unique_ptr<Transport> t = connect_tcp(o);
        const LinkTimes mine = time_link(*t);
        if (rank == 0) r = mine;
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return r;
}

}  // namespace mtf::tools
