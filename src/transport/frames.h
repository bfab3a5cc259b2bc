// frames.h — what every message of a multi-process transport carries: a
// fixed 88-byte header with the tag, the payload length, and the collective
// call the sender is in (sequence number, kind, op, bytes), so a receiver can
// tell that two ranks diverged instead of waiting forever. Used by the TCP
// and MPI transports. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mtf/transport.h"

namespace mtf::transport {

constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kHeader = 88;
constexpr size_t kKindBytes = 16, kOpBytes = 32;
constexpr uint16_t kFlagBye = 1;  // the sender is done: its exit is not a crash

struct FrameHeader {
  uint16_t flags = 0;
  uint64_t tag = 0, length = 0, seq = 0;
  int64_t call_bytes = 0;
  std::string kind, op;  // truncated to kKindBytes / kOpBytes

  // The header of a message sent during `call`.
  static FrameHeader for_call(const CollectiveCall& call, uint64_t tag, uint64_t length);
  void encode(char* out) const;  // kHeader bytes
  // Empty on success, else what is wrong with the bytes.
  std::string decode(const char* in);
  std::string describe() const;
};

struct Frame {
  FrameHeader h;
  std::vector<char> data;
};

// Buffers for payloads that arrive before their receive, reused: a fresh
// large buffer costs a page fault per 4 KiB, and memory handed back to the
// system and faulted in again made every 1 MiB allreduce over MPI stall
// for ~2.5 ms (measured). Keeps up to kMaxCount buffers of kMinBytes or
// more, kMaxBytes of capacity in all (the oldest go first), so a job's few
// huge messages are not held for its lifetime.
class SpareBuffers {
 public:
  static constexpr size_t kMinBytes = 4096;
  static constexpr size_t kMaxCount = 8;
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  std::vector<char> take(size_t n);  // n bytes, contents unspecified
  void give(std::vector<char> b);
  size_t count() const { return spares_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  std::vector<std::vector<char>> spares_;
  size_t bytes_ = 0;  // sum of the spares' capacities
};

std::string describe_call(const CollectiveCall& call);
// ValueError naming both ranks and both calls unless a message sent in
// `h`'s call may be received in `mine` (checks skipped when either side is
// not in a numbered collective).
void check_same_call(int me, const CollectiveCall& mine, int peer, const FrameHeader& h);

}  // namespace mtf::transport
