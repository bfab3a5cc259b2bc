// rank_links.h — latency and bandwidth between two of mtf's ranks on this
// machine, as threads of one process (the in-process transport) or as
// processes (TCP, with shared-memory rings unless shared_memory is false).
// Ranks as processes are real ones: mtf-sim starts itself once per rank
// (`mtf-sim --calibration_rank JOB ...`, through /proc/self/exe), and rank 0
// answers on a pipe; threads of one process connected the same way read
// loopback TCP at half the bandwidth processes get. With more than 2
// ranks, the ranks time in pairs all at once: the links as they are when
// ranks outnumber CPUs. For mtf-sim --calibrate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mtf/transport.h"

namespace mtf::tools {

constexpr int64_t kLinkAllreduceBytes = int64_t{4} << 20;

struct LinkTimes {
  double latency = 0;    // seconds one way, a 1-byte message
  double allreduce = 0;  // seconds for kLinkAllreduceBytes of float32 between 2 ranks
  // What the allreduce implies per link, less two latencies: for 2 ranks
  // the ring moves the whole buffer once each way.
  double bandwidth() const;
};

LinkTimes link_between_threads(int ranks);
// What a small allreduce between two ranks as threads costs the rank that
// arrives last once the other has blocked (held back kWakeHeldBack before
// each), beyond its cost while the other still spins (held back
// kSpinHeldBack): waking it. Each rank is the late one half the time; the
// median of the late ranks' times (HostFigures::collective_wake).
constexpr double kWakeHeldBack = 1e-3, kSpinHeldBack = 10e-6;
double collective_wake_between_threads();
LinkTimes link_between_processes(int ranks, bool shared_memory = true);

// Run by every rank of a world of 2 or more, in pairs (r, r + n/2) all
// timing at once; rank 0's figures count. Fixed repetition counts, so
// every pair makes the same calls.
LinkTimes time_link(Transport& t);
// time_link's figures as rank 0 answers them ("latency allreduce").
std::string link_answer(Transport& t);

// Starts `ranks` processes of this program that connect over TCP (with
// shared-memory rings unless shared_memory is false) and run `job`; returns
// what rank 0 wrote to stdout. IoError naming the rank when one fails.
std::string run_ranks_as_processes(const std::string& job, int ranks, bool shared_memory);
// Whether this process is one of those ranks (its arguments say so), and
// its main: connects, runs job(name, transport) and prints rank 0's answer.
bool is_calibration_rank(int argc, char** argv);
int calibration_rank_main(int argc, char** argv,
                          const std::function<std::string(const std::string&, Transport&)>& job);

}  // namespace mtf::tools
