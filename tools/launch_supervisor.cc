// mtf-launch's supervision of its ranks (launch_supervisor.h).
#include "launch_supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cli/exit_status.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kTailLines = 40;
using mtf::cli::kExitPeerFailed;

// Prints (or, when `shown` is false, keeps the tail of) the complete lines
// of `buf`; at end of stream also the unterminated rest.
void take_lines(Rank& r, std::string& buf, FILE* to, bool shown, bool prefix, bool at_end) {
  size_t start = 0;
  auto emit = [&](const char* p, size_t n) {
    if (shown) {
      if (prefix)
        std::fprintf(to, "[%d] %.*s\n", r.global, static_cast<int>(n), p);
      else
        std::fprintf(to, "%.*s\n", static_cast<int>(n), p);
    } else {
      r.tail.emplace_back(p, n);
      if (r.tail.size() > kTailLines) r.tail.pop_front();
    }
  };
  for (;;) {
    const size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    emit(buf.data() + start, nl - start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (at_end && !buf.empty()) {
    emit(buf.data(), buf.size());
    buf.clear();
  }
  std::fflush(to);
}

// Watches the ranks until all have exited and their output has ended:
// passes their lines on (rank 0's, or all with --output all; a failed
// rank's last lines otherwise), and when one fails, stops the others (they
// usually notice the loss themselves; after 2 s SIGTERM, after 5 s SIGKILL).
class Supervisor {
 public:
  // `restarts_left`: a failure is followed by a restart (said instead of
  // the exit status).
  Supervisor(std::vector<Rank>& ranks, bool all, bool restarts_left)
      : ranks_(ranks), all_(all), restarts_left_(restarts_left) {}

  // The launcher's exit code: 0, or the cause's status (128 + signal).
  int run() {
    while (poll_output()) {
      reap();
      stop_others_when_due();
    }
    return report();
  }

 private:
  bool shown(const Rank& r) const { return all_ || r.global == 0; }

  // A failed rank's kept lines, once its output has ended.
  void print_tail(Rank& r) {
    if (shown(r) || !r.failed_first || r.out >= 0 || r.err >= 0 || r.tail.empty()) return;
    std::fprintf(stderr, "mtf-launch: the last lines of rank %d:\n", r.global);
    for (const std::string& line : r.tail)
      std::fprintf(stderr, "[%d] %s\n", r.global, line.c_str());
    r.tail.clear();
    std::fflush(stderr);
  }

  // Waits up to 100 ms for output and passes it on; false once every rank
  // has exited and closed its output.
  bool poll_output() {
    std::vector<pollfd> fds;
    std::vector<std::pair<Rank*, bool>> who;  // rank, is stderr
    for (Rank& r : ranks_) {
      if (r.out >= 0) {
        fds.push_back({r.out, POLLIN, 0});
        who.push_back({&r, false});
      }
      if (r.err >= 0) {
        fds.push_back({r.err, POLLIN, 0});
        who.push_back({&r, true});
      }
    }
    bool all_exited = true;
    for (Rank& r : ranks_) all_exited = all_exited && r.exited;
    if (fds.empty() && all_exited) return false;
    ::poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = *who[k].first;
      int& fd = who[k].second ? r.err : r.out;
      std::string& buf = who[k].second ? r.err_buf : r.out_buf;
      FILE* to = who[k].second ? stderr : stdout;
      char chunk[65536];
      const ssize_t got = ::read(fd, chunk, sizeof(chunk));
      if (got > 0) {
        buf.append(chunk, static_cast<size_t>(got));
        take_lines(r, buf, to, shown(r), all_, false);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        take_lines(r, buf, to, shown(r), all_, true);
        ::close(fd);
        fd = -1;
        print_tail(r);
      }
    }
    return true;
  }

  // Notes ranks that have exited; the first failure starts stopping the
  // others. The cause reported is the first rank that died by a signal the
  // launcher did not send (a kill from outside, a crash); failing that, the
  // first rank that exited non-zero. A peer that notices a lost rank may
  // exit before the killed rank is reaped (a process with threads takes a
  // moment to die), so the first failure seen is not always the cause.
  void reap() {
    for (Rank& rank : ranks_) {
      if (rank.exited) continue;
      int status = 0;
      if (::waitpid(rank.pid, &status, WNOHANG | WUNTRACED | WCONTINUED) != rank.pid) continue;
      if (note_stopped(rank, status)) continue;
      rank.exited = true;
      rank.status = status;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok || term_sent_) continue;
      rank.failed_first = true;
      const int r = rank.global;
      const char* then = terminated_ ? "" : "; stopping the other ranks";
      if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "mtf-launch: rank %d was killed by signal %d (%s)%s\n", r,
                     WTERMSIG(status), strsignal(WTERMSIG(status)), then);
        if (!killed_) killed_ = &rank;
      } else {
        std::fprintf(stderr, "mtf-launch: rank %d exited with status %d%s\n", r,
                     WEXITSTATUS(status), then);
      }
      if (!failed_) failed_ = &rank;
      if (!own_failure_ && !WIFSIGNALED(status) && WEXITSTATUS(status) != kExitPeerFailed)
        own_failure_ = &rank;
      print_tail(rank);
      if (!terminated_) {
        terminated_ = true;
        term_at_ = Clock::now() + std::chrono::seconds(2);
        kill_at_ = Clock::now() + std::chrono::seconds(5);
      }
    }
  }

  // A rank stopped (SIGSTOP, a debugger) or continued: said once, and a
  // stopped rank is the cause when the others then fail waiting for it.
  // True when `status` was such a change rather than an exit.
  bool note_stopped(Rank& rank, int status) {
    if (WIFCONTINUED(status)) {
      rank.stopped_by = 0;
      if (stopped_ == &rank) stopped_ = nullptr;
      return true;
    }
    if (!WIFSTOPPED(status)) return false;
    rank.stopped_by = WSTOPSIG(status);
    if (!term_sent_) {
      std::fprintf(stderr,
                   "mtf-launch: rank %d was stopped by signal %d (%s); the other ranks wait for "
                   "it until their timeout (MTF_TIMEOUT_MS)\n",
                   rank.global, rank.stopped_by, strsignal(rank.stopped_by));
      if (!stopped_) stopped_ = &rank;
    }
    return true;
  }

  void stop_others_when_due() {
    if (terminated_ && !term_sent_ && Clock::now() >= term_at_) {
      term_sent_ = true;
      for (Rank& o : ranks_)
        if (!o.exited) ::kill(o.pid, SIGTERM);
    }
    if (terminated_ && Clock::now() >= kill_at_) {
      for (Rank& o : ranks_)
        if (!o.exited) ::kill(o.pid, SIGKILL);
    }
  }

  int report() const {
    if (!failed_) return 0;
    if (!killed_ && stopped_ && stopped_->stopped_by != 0) {
      // The others failed waiting for a rank that was stopped.
      const int code = 128 + stopped_->stopped_by;
      std::fprintf(stderr, "mtf-launch: job failed; cause: rank %d (stopped by signal %d); %s\n",
                   stopped_->global, stopped_->stopped_by, then(code).c_str());
      return code;
    }
    const Rank& cause = killed_ ? *killed_ : own_failure_ ? *own_failure_ : *failed_;
    const int status = cause.status;
    const int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    std::fprintf(stderr, "mtf-launch: job failed; cause: rank %d (%s %d); %s\n", cause.global,
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), then(code).c_str());
    return code;
  }

  std::string then(int code) const {
    return restarts_left_ ? "restarting" : "exiting with " + std::to_string(code);
  }

  std::vector<Rank>& ranks_;
  const bool all_;  // --output all
  const bool restarts_left_;
  const Rank* failed_ = nullptr;                 // the first rank seen to fail
  const Rank* killed_ = nullptr;                 // the first killed by a signal we did not send
  const Rank* own_failure_ = nullptr;            // the first that failed not for another's sake
  const Rank* stopped_ = nullptr;                // the first stopped (and not continued) rank
  bool terminated_ = false, term_sent_ = false;  // stopping the others; SIGTERM sent
  Clock::time_point term_at_{}, kill_at_{};
};

}  // namespace

int supervise(std::vector<Rank>& ranks, bool all, bool restarts_left) {
  return Supervisor(ranks, all, restarts_left).run();
}
