// mtf-launch: runs the ranks of an mtf program on this machine, alone or as
// one node of a job across several machines (in the manner of torchrun).
//
//   mtf-launch -n N [options] [--] PROGRAM ARGS...                (one machine)
//   mtf-launch --nnodes K --node_rank R --nproc_per_node N
//              --coordinator HOST:PORT [options] [--] PROGRAM ARGS...  (node R of K)
//   mtf-launch --new_token                     (prints a random job token)
//
// Node R runs global ranks R*N .. R*N+N-1. Each rank gets MTF_RANK,
// MTF_WORLD_SIZE, MTF_LOCAL_RANK, MTF_LOCAL_WORLD_SIZE, MTF_NODE_RANK,
// MTF_COORDINATOR (where rank 0 listens: on one machine a free loopback port
// unless given) and MTF_JOB_TOKEN: from MTF_JOB_TOKEN, else --token_file (or
// MTF_JOB_TOKEN_FILE), else, on one machine only, a fresh random one. Every
// node of a job must be given the same token, coordinator, --nnodes and
// --nproc_per_node; the ranks check this when they meet and fail at once,
// naming the difference, if not.
//
// Output: by default only rank 0's lines are printed, as the program prints
// them; another rank's last lines are printed, prefixed "[rank] ", if it
// fails. --output all prints every rank's lines, prefixed.
//
// When a rank fails (a non-zero exit or a signal) the others are given 2 s
// to notice and report it, then stopped (SIGTERM, and SIGKILL 3 s later),
// and mtf-launch exits with the status of the rank that caused the failure
// (128 + signal for a signal): the first killed by a signal it did not send,
// else a rank stopped (SIGSTOP) that the others failed waiting for, else the
// first that exited non-zero other than with status 3 (kExitPeerFailed: the
// examples' status when they failed because another rank did — lost it, or
// it failed a save), else the first that exited non-zero. Ranks die with the launcher
// (PR_SET_PDEATHSIG), so nothing is left running even if mtf-launch itself
// is killed; on the other nodes, the ranks then lose their peers and stop.
//
// With --max_restarts N, a failed job is started again (after the ranks
// are all gone and a short pause), up to N times, as torchrun does: the
// launcher says which rank failed and which restart this is, and the ranks
// see MTF_RESTART_COUNT (0 at first). The examples then resume from their
// latest valid checkpoint. On a job across machines, give every node's
// launcher the same --max_restarts: each restarts its ranks when they lose
// their peers, and they meet again at the coordinator.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launch_supervisor.h"

namespace {

constexpr const char* kUsage =
    "usage: mtf-launch -n N [options] [--] PROGRAM [ARGS...]\n"
    "       mtf-launch --nnodes K --node_rank R --nproc_per_node N --coordinator HOST:PORT\n"
    "                  [options] [--] PROGRAM [ARGS...]\n"
    "       mtf-launch --new_token\n"
    "options:\n"
    "  -n, --nproc_per_node N  ranks on this machine\n"
    "  --nnodes K              machines in the job (default 1)\n"
    "  --node_rank R           which machine this is, 0..K-1 (needed when K > 1)\n"
    "  --coordinator HOST:PORT where rank 0 (on node 0) listens (needed when K > 1)\n"
    "  --listen_host HOST      where this machine's ranks listen (default: the interface\n"
    "                          that reaches the coordinator)\n"
    "  --token_file FILE       the job token (else MTF_JOB_TOKEN; on one machine a random one)\n"
    "  --output rank0|all      print rank 0's lines (default) or every rank's, prefixed\n"
    "  --timeout_ms MS         deadline of every blocking call of the ranks\n"
    "  --connect_timeout_ms MS deadline of the ranks meeting\n"
    "  --max_restarts N        start the job again after a failure, up to N times (default 0)\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "mtf-launch: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "mtf-launch: %s\n", why.c_str());
  std::exit(1);
}

std::string random_token() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1) fail("OpenSSL could not supply random bytes for the token");
  std::string s;
  char hex[3];
  for (unsigned char c : b) {
    std::snprintf(hex, sizeof(hex), "%02x", c);
    s += hex;
  }
  return s;
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read the token file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  const size_t a = t.find_first_not_of(" \t\r\n");
  const size_t b = t.find_last_not_of(" \t\r\n");
  if (a == std::string::npos) fail("the token file " + path + " is empty");
  return t.substr(a, b - a + 1);
}

int parse_count(const std::string& flag, const std::string& v, int lo, int hi) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo || x > hi)
    usage(flag + " must be " + std::to_string(lo) + ".." + std::to_string(hi) + ", not \"" + v +
          "\"");
  return static_cast<int>(x);
}

// host:port -> (host without brackets, port); exits naming the flag.
std::pair<std::string, std::string> split_host_port(const std::string& flag, const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    usage(flag + " \"" + s + "\" must be HOST:PORT");
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  parse_count(flag + "'s port", s.substr(colon + 1), 1, 65535);
  return {host, s.substr(colon + 1)};
}

// The first address `host` resolves to (IPv4 first, as the ranks choose);
// exits with a clear error when it does not resolve.
sockaddr_storage resolve(const std::string& flag, const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    fail(flag + ": cannot resolve \"" + host + "\": " + ::gai_strerror(rc) +
         "; is the name right, and known to this machine (DNS or /etc/hosts)?");
  const addrinfo* pick = res;
  for (const addrinfo* a = res; a; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  sockaddr_storage out{};
  std::memcpy(&out, pick->ai_addr, pick->ai_addrlen);
  ::freeaddrinfo(res);
  return out;
}

std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof(buf));
  else
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof(buf));
  return a.ss_family == AF_INET6 ? "[" + std::string(buf) + "]" : std::string(buf);
}

// A port on `a` for rank 0 of a one-machine job to listen on, reserved
// until the launcher exits: the launcher keeps it bound (not listening,
// SO_REUSEADDR, closed on exec), so neither an ephemeral port of another
// process's connection nor another bind to port 0 can take it between now
// and rank 0's listen, which binds it with SO_REUSEADDR too (Linux lets a
// socket share an address with bound, non-listening sockets when both set
// it).
int reserve_port(sockaddr_storage a) {
  const int fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  const socklen_t size = a.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), size) != 0)
    fail("cannot bind " + address_text(a) + ": " + std::strerror(errno));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  // fd stays open until the launcher exits.
  return a.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port)
                                : ntohs(reinterpret_cast<sockaddr_in6&>(a).sin6_port);
}

std::vector<Rank>* g_ranks = nullptr;

void on_signal(int sig) {
  if (g_ranks)
    for (Rank& r : *g_ranks)
      if (!r.exited && r.pid > 0) ::kill(r.pid, SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// What the command line asks for.
struct LaunchOptions {
  int nproc = -1, nnodes = 1, node_rank = -1;
  std::string listen_host, coordinator, token_file, output = "rank0";
  int max_restarts = 0;
  std::string timeout_ms, connect_timeout_ms;  // passed to the ranks as given, when given
  char** program = nullptr;                    // the program and its arguments (argv-style)
};

// Parses the options before the program; exits for --help, --new_token and
// usage errors.
LaunchOptions parse_options(int argc, char** argv) {
  LaunchOptions o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& name) {
      if (i + 1 >= argc) usage(name + " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n" || a == "--np" || a == "--nproc_per_node") {
      o.nproc = parse_count(a, value(a), 1, 4096);
    } else if (a == "--nnodes") {
      o.nnodes = parse_count(a, value(a), 1, 4096);
    } else if (a == "--node_rank") {
      o.node_rank = parse_count(a, value(a), 0, 4095);
    } else if (a == "--coordinator") {
      o.coordinator = value(a);
    } else if (a == "--listen_host") {
      o.listen_host = value(a);
    } else if (a == "--token_file") {
      o.token_file = value(a);
    } else if (a == "--output") {
      o.output = value(a);
      if (o.output != "rank0" && o.output != "all") usage("--output must be rank0 or all");
    } else if (a == "--timeout_ms") {
      o.timeout_ms = std::to_string(parse_count(a, value(a), 1, 1 << 30));
    } else if (a == "--connect_timeout_ms") {
      o.connect_timeout_ms = std::to_string(parse_count(a, value(a), 1, 1 << 30));
    } else if (a == "--max_restarts") {
      o.max_restarts = parse_count(a, value(a), 0, 1000000);
    } else if (a == "--new_token") {
      std::printf("%s\n", random_token().c_str());
      std::exit(0);
    } else if (a == "-h" || a == "--help") {
      std::printf("mtf-launch: runs the ranks of an mtf program\n%s", kUsage);
      std::exit(0);
    } else if (!a.empty() && a[0] == '-') {
      usage("unknown option " + a);
    } else {
      break;
    }
  }
  if (o.nproc < 1) usage("-n N (--nproc_per_node) is required");
  if (i >= argc) usage("no program given");
  o.program = argv + i;
  if (o.nnodes > 1) {
    if (o.node_rank < 0) usage("--node_rank is required with --nnodes " + std::to_string(o.nnodes));
    if (o.coordinator.empty())
      usage("--coordinator HOST:PORT (where node 0's rank 0 listens) is required with --nnodes " +
            std::to_string(o.nnodes));
  }
  if (o.node_rank < 0) o.node_rank = 0;
  if (o.node_rank >= o.nnodes)
    usage("--node_rank " + std::to_string(o.node_rank) + " is outside 0.." +
          std::to_string(o.nnodes - 1));
  if (static_cast<long>(o.nnodes) * o.nproc > 65536) usage("more than 65536 ranks");
  return o;
}

// The job's token, the same on every node: MTF_JOB_TOKEN, else the token
// file (--token_file, MTF_JOB_TOKEN_FILE), else a new one for a one-node job.
std::string job_token(const LaunchOptions& o) {
  std::string token, token_file = o.token_file;
  if (const char* t = std::getenv("MTF_JOB_TOKEN"); t && *t) token = t;
  if (token.empty() && token_file.empty())
    if (const char* f = std::getenv("MTF_JOB_TOKEN_FILE"); f && *f) token_file = f;
  if (token.empty() && !token_file.empty()) token = read_token_file(token_file);
  if (token.empty()) {
    if (o.nnodes > 1)
      fail(
          "a job across machines needs the same token on every node: make one with "
          "`(umask 077; mtf-launch --new_token > FILE)`, copy FILE to every node and pass "
          "--token_file FILE "
          "(or set MTF_JOB_TOKEN)");
    token = random_token();
  }
  if (token.size() < 8) fail("the job token must have at least 8 characters");
  return token;
}

// The coordinator's address, resolved now so that a wrong name fails before
// any rank starts: --coordinator, or a free port on the listen host.
void resolve_coordinator(LaunchOptions& o) {
  if (o.coordinator.empty()) {
    const sockaddr_storage a =
        resolve("--listen_host", o.listen_host.empty() ? "127.0.0.1" : o.listen_host);
    o.coordinator = address_text(a) + ":" + std::to_string(reserve_port(a));
  } else {
    resolve("--coordinator", split_host_port("--coordinator", o.coordinator).first);
  }
  if (!o.listen_host.empty()) resolve("--listen_host", o.listen_host);
}

// In the child for local rank r: the job's variables, then the program.
[[noreturn]] void exec_rank(const LaunchOptions& o, const std::string& token, int r, int restart) {
  const int world = o.nnodes * o.nproc, first = o.node_rank * o.nproc;
  ::setenv("MTF_RANK", std::to_string(first + r).c_str(), 1);
  ::setenv("MTF_WORLD_SIZE", std::to_string(world).c_str(), 1);
  ::setenv("MTF_LOCAL_RANK", std::to_string(r).c_str(), 1);
  ::setenv("MTF_LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  ::setenv("MTF_NODE_RANK", std::to_string(o.node_rank).c_str(), 1);
  ::setenv("MTF_COORDINATOR", o.coordinator.c_str(), 1);
  ::setenv("MTF_JOB_TOKEN", token.c_str(), 1);
  ::setenv("MTF_RESTART_COUNT", std::to_string(restart).c_str(), 1);
  ::unsetenv("MTF_JOB_TOKEN_FILE");
  if (!o.listen_host.empty()) ::setenv("MTF_LISTEN_HOST", o.listen_host.c_str(), 1);
  if (!o.timeout_ms.empty()) ::setenv("MTF_TIMEOUT_MS", o.timeout_ms.c_str(), 1);
  if (!o.connect_timeout_ms.empty())
    ::setenv("MTF_CONNECT_TIMEOUT_MS", o.connect_timeout_ms.c_str(), 1);
  ::signal(SIGPIPE, SIG_DFL);
  ::execvp(o.program[0], o.program);
  std::fprintf(stderr, "mtf-launch: cannot run %s: %s\n", o.program[0], std::strerror(errno));
  ::_exit(127);
}

// Forks this node's ranks, each with its stdout and stderr on pipes;
// `restart` counts the earlier attempts.
void start_ranks(const LaunchOptions& o, const std::string& token, std::vector<Rank>& ranks,
                 int restart) {
  const pid_t launcher = ::getpid();
  for (int r = 0; r < o.nproc; ++r) {
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
      exec_rank(o, token, r, restart);
    }
    ::close(out[1]);
    ::close(err[1]);
    ranks[r].global = o.node_rank * o.nproc + r;
    ranks[r].pid = pid;
    ranks[r].out = out[0];
    ranks[r].err = err[0];
  }
}

}  // namespace

int main(int argc, char** argv) {
  LaunchOptions o = parse_options(argc, argv);
  const std::string token = job_token(o);
  resolve_coordinator(o);
  const bool all = o.output == "all";
  if (o.nnodes > 1 && o.node_rank != 0 && !all)
    std::fprintf(stderr,
                 "mtf-launch: node %d of %d, ranks %d-%d; rank 0's output is on node 0 (these "
                 "ranks' lines are shown if they fail; --output all shows them all)\n",
                 o.node_rank, o.nnodes, o.node_rank * o.nproc, (o.node_rank + 1) * o.nproc - 1);

  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGHUP, on_signal);
  ::signal(SIGPIPE, SIG_IGN);
  for (int restart = 0;; ++restart) {
    std::vector<Rank> ranks(o.nproc);
    g_ranks = &ranks;
    start_ranks(o, token, ranks, restart);
    const int code = supervise(ranks, all, restart < o.max_restarts);
    g_ranks = nullptr;
    if (code == 0) return 0;
    if (restart >= o.max_restarts) {
      if (o.max_restarts > 0)
        std::fprintf(stderr, "mtf-launch: giving up: the job failed after %d restart%s\n", restart,
                     restart == 1 ? "" : "s");
      return code;
    }
    // Every rank has exited and been reaped; a pause lets their sockets
    // and shared-memory segments go before the next attempt meets.
    std::fprintf(stderr, "mtf-launch: restart %d of %d: starting the job's %d rank%s again\n",
                 restart + 1, o.max_restarts, o.nproc, o.nproc == 1 ? "" : "s");
    std::fflush(stderr);
    ::usleep(500 * 1000);
  }
}
