// mtf/transport.h — point-to-point messaging between the ranks of one job,
// and a small rendezvous store. Collectives (src/collectives/) are written
// only against these interfaces, so they run unchanged in process, in the
// torus simulator, over TCP and over MPI.
//
// Contract for every Transport:
// - send() copies the bytes before it returns (the caller may reuse its
//   buffer at once) and does not wait for the receiver;
// - recv() blocks until the next message from `peer` with `tag` arrives, and
//   needs its size to be exactly `bytes` (ValueError otherwise, naming both);
// - messages from one peer with one tag arrive in the order they were sent;
// - every blocking call ends by its deadline: TimeoutError names the ranks,
//   the tag and the wait; PeerLostError names the lost rank.
// - without data (carries_data() false) only sizes and timing matter.
// A Transport object belongs to one rank and is used from one fiber or
// thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mtf {

// The collective a rank is in, for transports that check that every rank
// calls the same collectives in the same order: each call gets the next
// sequence number, and messages carry it with the kind, op and size, so a
// rank that skipped or swapped a collective is named instead of hanging.
struct CollectiveCall {
  uint64_t seq = 0;  // set by the transport: the n-th call on this rank
  std::string kind;  // "allreduce", "allgather", ...
  std::string op;    // the graph op it serves
  int64_t bytes = 0;
  std::string describe() const;
};

// One message of an exchange(): to or from `peer`, with `tag`.
struct SendSpec {
  int peer;
  uint64_t tag;
  const void* data;
  size_t bytes;
};
struct RecvSpec {
  int peer;
  uint64_t tag;
  void* data;
  size_t bytes;
};

// One pass of a lockstep ring collective as this rank takes part in it:
// the elements [lo, hi) of `element_bytes` each split into n chunks
// (chunk c: [lo + len*c/n, lo + len*(c+1)/n)), and at each of the n-1 steps s
// this rank sends chunk (send_chunk - s) mod n to the next rank of `order`
// and then receives chunk (recv_chunk - s) mod n from the previous one.
struct RingPassTiming {
  const std::vector<int>* order = nullptr;  // the ring's ranks
  int position = 0;                         // this rank's place in *order
  uint64_t tag = 0;
  int64_t lo = 0, hi = 0;
  size_t element_bytes = 0;
  int send_chunk = 0, recv_chunk = 0;
};

// A collective of a fixed pattern of rounds (recursive doubling and the
// like) as this rank takes part in it: in each round it sends at most one
// message (to send_to) and then receives at most one (from recv_from), as
// send() then recv() would. Every rank of `group` describes the same
// number of rounds with the same tag.
struct ExchangeRound {
  int send_to = -1;  // -1: no send this round
  size_t send_bytes = 0;
  int recv_from = -1;  // -1: no receive this round
  size_t recv_bytes = 0;
};
struct ExchangeRoundsTiming {
  const std::vector<int>* group = nullptr;  // the ranks taking part
  int position = 0;                         // this rank's place in *group
  uint64_t tag = 0;                         // every message's tag
  std::vector<ExchangeRound> rounds;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void send(int peer, uint64_t tag, const void* data, size_t bytes) = 0;
  virtual void recv(int peer, uint64_t tag, void* data, size_t bytes) = 0;
  // Sends every message of `sends` and receives every one of `recvs`, as if
  // by send() of each in order and then recv() of each in order (the same
  // contract), and returns when all are done. A transport may post the
  // receives first, so data that arrives while it sends lands in place
  // (a ring step's send and receive, both directions of a ring).
  virtual void exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs);

  // False for a transport that only times messages (the simulator's
  // cost-only mode): data pointers may then be null, nothing is copied, and
  // collectives skip their local data movement.
  virtual bool carries_data() const { return true; }

  // For transports that time messages rather than send them (the
  // simulator): times the passes' steps in lockstep (step s: every pass's
  // send, then every pass's receive) all at once and returns true; the
  // caller then still exchanges the data message by message when
  // carries_data(), untimed. Or returns false having done nothing, and the
  // caller exchanges message by message. Every rank of the rings makes the
  // same choice. A ring of n ranks then costs the simulator O(n) fiber
  // switches instead of O(n^2).
  virtual bool time_ring_passes(const std::vector<RingPassTiming>& passes);
  // The same for a collective of rounds: times every round of every rank of
  // the group at once and returns true (the caller then still moves the
  // data message by message when carries_data(), untimed), or returns false
  // having done nothing. O(group) fiber switches instead of one per message.
  virtual bool time_exchange_rounds(const ExchangeRoundsTiming& timing);

  // Ring collectives move each step's chunk in segments of at most this many
  // bytes, one exchange() each, so what a step receives is reduced while it
  // is still in cache (measured: 2.2x the bandwidth of whole chunks for a
  // 16 MiB allreduce across 2 processes). 0: whole chunks, for the
  // simulator, whose links model a pipelined transfer themselves.
  virtual size_t ring_segment_bytes() const { return 256 * 1024; }

  // True when every pair of ranks is equally near (one machine, or hosts on
  // a switch): mid-size allreduces then go by halving-doubling, whose
  // partners are far apart on a ring (measured across 4 and 8 processes:
  // 1.7-2.7x the ring's bandwidth at 256 KiB-1 MiB). False for the
  // simulator's tori, where rings between neighbours win.
  virtual bool flat_network() const { return true; }

  // How many ranks of the job run on this machine (this one included), as
  // far as the transport knows; they share its CPUs (and BLAS's threads).
  virtual int local_size() const { return 1; }

  // The machine of every rank of the job, numbered by the lowest rank on it
  // (machines()[r] == machines()[q] when r and q share a machine); empty
  // when the transport does not know, taken as one machine. The same on
  // every rank. Collectives over groups that span machines go hierarchical:
  // within each machine first, then between machines.
  virtual std::vector<int> machines() const { return {}; }

  // How this rank reaches its peers, for logs ("shared memory with 3 ranks
  // on this machine"); empty when there is nothing to add to the
  // transport's name.
  virtual std::string describe_links() const { return {}; }

  // Marks the start of a collective call (numbered here); the default
  // keeps it for error messages only.
  virtual void begin_collective(CollectiveCall call);
  const CollectiveCall& current_collective() const { return call_; }

  // Deadline of each blocking call (default 60 s).
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

 protected:
  // Numbers and records `call`; transports that override begin_collective
  // call this first.
  void record_collective(CollectiveCall call);
  // ValueError unless 0 <= peer < size() and peer != rank().
  void check_peer(int peer, const char* what) const;

 private:
  std::chrono::milliseconds timeout_{60000};
  CollectiveCall call_;
  uint64_t calls_ = 0;
};

// A key-value store for rendezvous: ranks publish addresses or tokens and
// wait for each other's. Thread- and fiber-safe.
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // Waits until `key` is set, up to `timeout` (TimeoutError naming the key).
  virtual std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds delta to the integer at key (0 when unset) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
};

}  // namespace mtf
