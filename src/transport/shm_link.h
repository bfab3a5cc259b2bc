// shm_link.h — shared-memory byte streams between ranks on one machine,
// under the TCP transport's framing and progress engine. Internal.
//
// link_local_peers() runs right after the TCP rendezvous, over the
// authenticated connections: ranks with the same host identity (host name,
// boot id, network/pid/ipc/mount namespaces and user) agree on a link.
// Each such rank makes one anonymous segment (memfd_create: no name in
// /dev/shm, so nothing is left behind however a job dies, kill -9
// included) that holds one ring per local peer writing to it, plus a
// doorbell pipe; peers map each other's segments through /proc/<pid>/fd.
// A pair where anything fails (no /proc, another user) stays on TCP, and
// both sides know it.
//
// A ShmLink is then a non-blocking byte stream each way: write() puts what
// fits into the peer's ring for us, read() takes what has arrived in ours.
// Waiting (ShmLinks::arm / the doorbell fd in poll()) has no lost wake-ups:
// a writer rings the reader's doorbell when the reader has said it waits,
// a reader rings the writer's when the writer waits for space. Each ring
// holds records that carry their own ready mark in their first cache line
// (shm_link.cc), and a small message costs the writer no read of the
// reader's tail and the reader no write to it: the writer looks at the
// tail only when its own copy says the ring is full, and the reader
// publishes its tail every 64 KiB (a quarter ring at most), when the
// writer waits for space, and before it sleeps. Liveness
// stays with the TCP connection, which the kernel closes when a process
// dies: the transport reads a closed connection of a linked peer as lost
// unless the peer said goodbye through its ring first.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/socket_io.h"

namespace mtf::transport {

struct ShmRing;
struct ShmSegmentHeader;

class ShmLink {
 public:
  ShmLink(ShmRing* in, ShmRing* out, ShmSegmentHeader* theirs, void* their_map,
          size_t their_map_bytes, int their_doorbell);
  ~ShmLink();
  ShmLink(const ShmLink&) = delete;
  ShmLink& operator=(const ShmLink&) = delete;

  // Bytes of iov[0..n) put into the peer's ring (0 when it is full).
  size_t write(const iovec* iov, int n);
  // Bytes taken from our ring into buf (0 when nothing has arrived).
  size_t read(void* buf, size_t n);
  bool readable() const;
  bool writable() const;
  // Before sleeping until this link's ring has space: asks the reader to
  // ring our doorbell when it frees some. Cleared by ShmLinks::disarm.
  void want_space();
  void clear_want_space();
  // Tells the writer about every byte read so far (read() does so only
  // now and then, sparing the writer a cache miss per message).
  // Called before this rank sleeps and when it closes.
  void publish_read();

 private:
  void ring_peer();
  void publish(uint64_t read_pos);
  ShmRing* in_;
  ShmRing* out_;
  ShmSegmentHeader* theirs_;
  void* their_map_;
  size_t their_map_bytes_;
  int their_doorbell_;
  // Writing: where our next record goes, and the reader's tail as last
  // seen (looked at again only when these say the ring is full). Reading:
  // where the record being read starts, the bytes of it taken, and the
  // position the writer has been told of.
  uint64_t head_ = 0, seen_tail_ = 0;
  uint64_t read_ = 0, in_record_ = 0, published_ = 0;
};

// Every link of one rank, and its own segment and doorbell.
class ShmLinks {
 public:
  ShmLinks() = default;
  ~ShmLinks();
  ShmLinks(ShmLinks&&) = delete;
  ShmLinks& operator=(ShmLinks&&) = delete;

  ShmLink* link(int peer) const {
    return peer < static_cast<int>(links_.size()) ? links_[peer].get() : nullptr;
  }
  int count() const;
  // The machine of every rank (the lowest rank of its host identity), as
  // Transport::machines() gives it; the same on every rank.
  const std::vector<int>& machines() const { return machines_; }
  // The doorbell's read end, for poll(POLLIN); -1 without links.
  int doorbell() const { return doorbell_[0]; }
  // Says this rank is about to sleep in poll(): writers ring the doorbell.
  void arm();
  // Ends a wait: clears the flags and empties the doorbell.
  void disarm();

 private:
  friend std::unique_ptr<ShmLinks> link_local_peers(int, int, const std::vector<int>&, bool, size_t,
                                                    Clock::time_point);
  std::vector<std::unique_ptr<ShmLink>> links_;  // per rank; null: TCP
  std::vector<int> machines_;
  void* map_ = nullptr;  // our segment
  size_t map_bytes_ = 0;
  int doorbell_[2] = {-1, -1};
};

// This process's host identity: ranks with equal identities can share memory.
std::string host_identity();

// Over the connected sockets (fds[p]; -1 for our own rank), agrees with
// every peer of the same host identity on a link with rings of
// `ring_bytes`. enabled false (MTF_SHM=0 on either side) keeps every pair
// on TCP. Refused on a connection failure or at the deadline.
std::unique_ptr<ShmLinks> link_local_peers(int rank, int world, const std::vector<int>& fds,
                                           bool enabled, size_t ring_bytes,
                                           Clock::time_point deadline);

}  // namespace mtf::transport
