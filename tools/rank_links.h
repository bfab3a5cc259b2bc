// rank_links.h — latency and bandwidth between two of mtf's ranks on this
// machine, as threads of one process (the in-process transport) or as
// processes (TCP, with shared-memory rings unless shared_memory is false;
// the ranks run in threads of this process but connect exactly as
// processes do). With more than 2 ranks, the ranks time in pairs all at
// once: the links as they are when ranks outnumber CPUs. For
// mtf-sim --calibrate.
#pragma once

#include <cstdint>

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
LinkTimes link_between_processes(int ranks, bool shared_memory = true);

}  // namespace mtf::tools
