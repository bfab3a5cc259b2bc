// Latency and bandwidth between ranks; see rank_links.h.
#include "rank_links.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "calibration_timing.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf::tools {
namespace {
constexpr int64_t kAllreduceFloats = kLinkAllreduceBytes / 4;
}  // namespace

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

namespace {

// A loopback port for rank 0 to listen on, reserved while the ranks run:
// the socket stays bound (not listening, SO_REUSEADDR, closed on exec), so
// no ephemeral port of another connection can take it before rank 0 binds
// it with SO_REUSEADDR too (Linux lets the two share it), as mtf-launch
// reserves its own. Closing a probe socket at once left that window open:
// calibration failed with "Address already in use".
class ReservedPort {
 public:
  ReservedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw IoError("calibration: cannot open a socket to find a free port");
    const int one = 1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      close(fd_);
      throw IoError("calibration: cannot bind a loopback socket to find a free port");
    }
    port_ = ntohs(a.sin_port);
  }
  ~ReservedPort() { close(fd_); }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

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

namespace {

void spin_for(double seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
}

// The late rank's median time in a 32-float allreduce when it arrives
// `held_back` seconds after the other, which rank is late alternating.
double late_allreduce_seconds(double held_back) {
  constexpr int kRounds = 160, kWarmup = 10;
  std::vector<std::vector<double>> late(2);
  run_in_process(
      2,
      [&](Transport& t) {
        std::vector<float> data(32, 1.f);
        Group g;
        g.ranks = {0, 1};
        g.index = t.rank();
        for (int i = 0; i < kRounds; ++i) {
          const bool me_late = i % 2 == t.rank();
          if (me_late) spin_for(held_back);
          const auto start = Clock::now();
          allreduce(t, g, data.data(), 32, float32, ReduceOp::kSum, static_cast<uint64_t>(i + 1));
          const double took = seconds_since(start);
          std::fill(data.begin(), data.end(), 1.f);
          if (me_late && i >= kWarmup) late[static_cast<size_t>(t.rank())].push_back(took);
        }
      },
      RankExecution::kPool);
  std::vector<double> all = late[0];
  all.insert(all.end(), late[1].begin(), late[1].end());
  return median(all);
}

}  // namespace

double collective_wake_between_threads() {
  return std::max(0.0,
                  late_allreduce_seconds(kWakeHeldBack) - late_allreduce_seconds(kSpinHeldBack));
}

namespace {

constexpr const char* kRankFlag = "--calibration_rank";

TcpOptions rank_options(int rank, int world, int port, const std::string& token,
                        bool shared_memory) {
  TcpOptions o;
  o.source = "mtf-sim --calibrate";
  o.rank = rank;
  o.world_size = world;
  o.local_rank = rank;
  o.local_size = world;
  o.coordinator = "127.0.0.1:" + std::to_string(port);
  o.listen_host = "127.0.0.1";
  o.token = token;
  o.timeout = std::chrono::milliseconds(30000);
  o.connect_timeout = std::chrono::milliseconds(30000);
  o.shared_memory = shared_memory;
  return o;
}

}  // namespace

std::string run_ranks_as_processes(const std::string& job, int ranks, bool shared_memory) {
  const ReservedPort reserved;
  const std::string port = std::to_string(reserved.port());
  const std::string token = "calibration-" + std::to_string(getpid());
  const std::string world = std::to_string(ranks), shm = shared_memory ? "1" : "0";
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw IoError("calibration: pipe2 failed");
  std::vector<pid_t> children;
  std::string failure;
  for (int rank = 0; rank < ranks && failure.empty(); ++rank) {
    const std::string r = std::to_string(rank);
    std::vector<std::string> args = {"mtf-sim", kRankFlag, job, r, world, port, token, shm};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // Rank 0 answers on the pipe; the others' stdout goes nowhere.
    if (rank == 0) {
      posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    } else {
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid = 0;
    const int e = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (e != 0) {
      failure = std::string("starting a rank (/proc/self/exe) failed: ") + std::strerror(e);
    } else {
      children.push_back(pid);
    }
  }
  close(out[1]);
  // Ranks started before one failed to start would wait for it until their
  // connect deadline.
  if (!failure.empty())
    for (pid_t pid : children) kill(pid, SIGTERM);
  std::string answer;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) != 0;) {
    if (n > 0) answer.append(buf, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(out[0]);
  for (size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    while (waitpid(children[i], &status, 0) < 0 && errno == EINTR) {
    }
    if (failure.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      failure = "rank " + std::to_string(i) + " of " + world + " " +
                (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                   : "was killed by signal " + std::to_string(WTERMSIG(status)));
    }
  }
  if (!failure.empty()) {
    throw IoError("calibration: ranks as processes (" + job + ", " + world + " ranks): " + failure +
                  "; its error, if any, is on stderr above");
  }
  return answer;
}

bool is_calibration_rank(int argc, char** argv) {
  return argc > 1 && std::string(argv[1]) == kRankFlag;
}

int calibration_rank_main(int argc, char** argv,
                          const std::function<std::string(const std::string&, Transport&)>& job) {
  if (argc != 8) {
    std::fprintf(stderr, "%s is mtf-sim --calibrate's own: JOB RANK WORLD PORT TOKEN SHM\n",
                 kRankFlag);
    return 2;
  }
  try {
    const TcpOptions o = rank_options(std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]),
                                      argv[6], std::string(argv[7]) == "1");
    std::unique_ptr<Transport> t = connect_tcp(o);
    const std::string answer = job(argv[2], *t);
    if (t->rank() == 0) std::fputs(answer.c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mtf-sim calibration rank %s: %s\n", argv[3], e.what());
    return 1;
  }
}

LinkTimes link_between_processes(int ranks, bool shared_memory) {
  const std::string answer = run_ranks_as_processes("link", ranks, shared_memory);
  LinkTimes r;
  if (std::sscanf(answer.c_str(), "%lf %lf", &r.latency, &r.allreduce) != 2)
    throw IoError("calibration: rank 0 of the link measurement answered \"" + answer + "\"");
  return r;
}

std::string link_answer(Transport& t) {
  const LinkTimes r = time_link(t);
  char line[96];
  std::snprintf(line, sizeof(line), "%.17g %.17g\n", r.latency, r.allreduce);
  return line;
}

}  // namespace mtf::tools
