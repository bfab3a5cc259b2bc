// mtf-launch: runs N ranks of an mtf program on this machine.
//
//   mtf-launch -n N [--listen_host HOST] [--timeout_ms MS] [--] PROGRAM ARGS...
//
// Each rank gets MTF_RANK, MTF_WORLD_SIZE, MTF_COORDINATOR (rank 0's
// address, a free port on the listen host) and a fresh random MTF_JOB_TOKEN.
// Every line a rank prints is prefixed with "[rank] ". When a rank fails (a
// non-zero exit or a signal) the others are given 2 s to notice and report
// it, then stopped (SIGTERM, and SIGKILL 3 s later), and mtf-launch exits with the status of the
// rank that caused the failure (128 + signal for a signal): the first killed by a signal it did not
// send, else the first that exited non-zero. Ranks die with the launcher (PR_SET_PDEATHSIG), so
// nothing is left running even if mtf-launch itself is killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "mtf-launch: %s\nusage: mtf-launch -n N [--listen_host HOST] [--timeout_ms MS] "
               "[--] PROGRAM [ARGS...]\n",
               why);
  std::exit(2);
}

std::string random_token() {
  unsigned char b[16];
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (!f || std::fread(b, 1, sizeof(b), f) != sizeof(b)) {
    std::fprintf(stderr, "mtf-launch: cannot read /dev/urandom for the job token\n");
    std::exit(1);
  }
  std::fclose(f);
  std::string s;
  char hex[3];
  for (unsigned char c : b) {
    std::snprintf(hex, sizeof(hex), "%02x", c);
    s += hex;
  }
  return s;
}

int free_port(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "mtf-launch: --listen_host %s is not an IPv4 address\n", host.c_str());
    std::exit(2);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::fprintf(stderr, "mtf-launch: cannot bind %s: %s\n", host.c_str(), std::strerror(errno));
    std::exit(1);
  }
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct Rank {
  pid_t pid = -1;
  int out = -1, err = -1;
  std::string out_buf, err_buf;
  bool exited = false;
  int status = 0;
};

std::vector<Rank>* g_ranks = nullptr;

void on_signal(int sig) {
  if (g_ranks)
    for (Rank& r : *g_ranks)
      if (!r.exited && r.pid > 0) ::kill(r.pid, SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void flush_lines(int rank, std::string& buf, FILE* to, bool all) {
  size_t start = 0;
  for (;;) {
    const size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::fprintf(to, "[%d] %.*s\n", rank, static_cast<int>(nl - start), buf.data() + start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    std::fprintf(to, "[%d] %s\n", rank, buf.c_str());
    buf.clear();
  }
  std::fflush(to);
}

}  // namespace

int main(int argc, char** argv) {
  int n = -1;
  std::string host = "127.0.0.1";
  std::string timeout_ms;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) {
      if (i + 1 >= argc) usage((std::string(name) + " needs a value").c_str());
      return std::string(argv[++i]);
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n" || a == "--np") {
      const std::string v = value("-n");
      char* end = nullptr;
      n = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (*end || n < 1 || n > 4096) usage(("-n must be 1..4096, not " + v).c_str());
    } else if (a == "--listen_host") {
      host = value("--listen_host");
    } else if (a == "--timeout_ms") {
      timeout_ms = value("--timeout_ms");
    } else if (a == "-h" || a == "--help") {
      usage("runs N ranks of an mtf program");
    } else if (!a.empty() && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else {
      break;
    }
  }
  if (n < 1) usage("-n N is required");
  if (i >= argc) usage("no program given");
  const std::string token = random_token();
  const std::string coordinator = host + ":" + std::to_string(free_port(host));

  std::vector<Rank> ranks(n);
  g_ranks = &ranks;
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGHUP, on_signal);
  ::signal(SIGPIPE, SIG_IGN);
  const pid_t launcher = ::getpid();
  for (int r = 0; r < n; ++r) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      std::perror("mtf-launch: pipe");
      on_signal(SIGTERM);
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("mtf-launch: fork");
      on_signal(SIGTERM);
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(127);  // the launcher died already
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::setenv("MTF_RANK", std::to_string(r).c_str(), 1);
      ::setenv("MTF_WORLD_SIZE", std::to_string(n).c_str(), 1);
      ::setenv("MTF_LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      ::setenv("MTF_COORDINATOR", coordinator.c_str(), 1);
      ::setenv("MTF_JOB_TOKEN", token.c_str(), 1);
      ::setenv("MTF_LISTEN_HOST", host.c_str(), 1);
      if (!timeout_ms.empty()) ::setenv("MTF_TIMEOUT_MS", timeout_ms.c_str(), 1);
      ::signal(SIGPIPE, SIG_DFL);
      ::execvp(argv[i], argv + i);
      std::fprintf(stderr, "mtf-launch: cannot run %s: %s\n", argv[i], std::strerror(errno));
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    ranks[r].pid = pid;
    ranks[r].out = out[0];
    ranks[r].err = err[0];
  }

  // The cause reported is the first rank that died by a signal the launcher
  // did not send (a kill from outside, a crash); failing that, the first rank
  // that exited non-zero. A peer that notices a lost rank may exit before the
  // killed rank is reaped (a process with threads takes a moment to die), so
  // the first failure seen is not always the cause.
  int failed = -1, killed = -1;
  Clock::time_point term_at{}, kill_at{};
  bool terminated = false, term_sent = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> who;  // rank, is stderr
    for (int r = 0; r < n; ++r) {
      if (ranks[r].out >= 0) {
        fds.push_back({ranks[r].out, POLLIN, 0});
        who.push_back({r, false});
      }
      if (ranks[r].err >= 0) {
        fds.push_back({ranks[r].err, POLLIN, 0});
        who.push_back({r, true});
      }
    }
    bool all_exited = true;
    for (Rank& r : ranks) all_exited = all_exited && r.exited;
    if (fds.empty() && all_exited) break;
    ::poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = ranks[who[k].first];
      int& fd = who[k].second ? r.err : r.out;
      std::string& buf = who[k].second ? r.err_buf : r.out_buf;
      char chunk[65536];
      const ssize_t got = ::read(fd, chunk, sizeof(chunk));
      if (got > 0) {
        buf.append(chunk, static_cast<size_t>(got));
        flush_lines(who[k].first, buf, who[k].second ? stderr : stdout, false);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        flush_lines(who[k].first, buf, who[k].second ? stderr : stdout, true);
        ::close(fd);
        fd = -1;
      }
    }
    for (int r = 0; r < n; ++r) {
      if (ranks[r].exited) continue;
      int status = 0;
      if (::waitpid(ranks[r].pid, &status, WNOHANG) != ranks[r].pid) continue;
      ranks[r].exited = true;
      ranks[r].status = status;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok || term_sent) continue;
      if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "mtf-launch: rank %d was killed by signal %d (%s)%s\n", r,
                     WTERMSIG(status), strsignal(WTERMSIG(status)),
                     terminated ? "" : "; stopping the other ranks");
        if (killed < 0) killed = r;
      } else {
        std::fprintf(stderr, "mtf-launch: rank %d exited with status %d%s\n", r,
                     WEXITSTATUS(status), terminated ? "" : "; stopping the other ranks");
      }
      if (failed < 0) failed = r;
      if (!terminated) {
        // The others usually notice the loss themselves and exit with an
        // error naming it; after 2 s they get SIGTERM, after 5 s SIGKILL.
        terminated = true;
        term_at = Clock::now() + std::chrono::seconds(2);
        kill_at = Clock::now() + std::chrono::seconds(5);
      }
    }
    if (terminated && !term_sent && Clock::now() >= term_at) {
      term_sent = true;
      for (Rank& o : ranks)
        if (!o.exited) ::kill(o.pid, SIGTERM);
    }
    if (terminated && Clock::now() >= kill_at) {
      for (Rank& o : ranks)
        if (!o.exited) ::kill(o.pid, SIGKILL);
    }
  }
  if (failed < 0) return 0;
  const int cause = killed >= 0 ? killed : failed;
  const int status = ranks[cause].status;
  const int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  std::fprintf(stderr, "mtf-launch: job failed; cause: rank %d (%s %d); exiting with %d\n", cause,
               WIFSIGNALED(status) ? "signal" : "status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), code);
  return code;
}
