// launch_supervisor.h — mtf-launch's watch over the ranks it started: their
// output passed on, failures noticed, the others stopped, and the cause
// named (tools/mtf_launch.cc's header comment states the rules).
#pragma once

#include <sys/types.h>

#include <deque>
#include <string>
#include <vector>

struct Rank {
  int global = 0;
  pid_t pid = -1;
  int out = -1, err = -1;
  std::string out_buf, err_buf;
  bool exited = false;
  int status = 0;
  int stopped_by = 0;            // the signal that stopped it (SIGSTOP, ...), 0 while it runs
  bool failed_first = false;     // failed before the launcher stopped the job
  std::deque<std::string> tail;  // its last lines, when they are not printed
};

// Watches `ranks` (started, with their output on pipes) until all have
// exited and their output has ended; passes their lines on (rank 0's, or
// every rank's prefixed when `all`; a failed rank's last lines otherwise),
// and when one fails stops the others. Returns the launcher's exit code: 0,
// or the cause's status (128 + signal). `restarts_left`: a failure is
// followed by a restart (said instead of the exit status).
int supervise(std::vector<Rank>& ranks, bool all, bool restarts_left);
