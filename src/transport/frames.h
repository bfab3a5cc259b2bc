// frames.h — what every message of a multi-process transport carries: a
// header with the tag, the payload length, and the collective call the
// sender is in (sequence number, kind, op, bytes), so a receiver can tell
// that two ranks diverged instead of waiting forever. Used by the TCP and
// MPI transports. Internal.
//
// The header is 40 bytes, then the call's kind and op names (48 bytes)
// when kFlagNames is set. MPI sends them every time; the TCP transport's
// streams only when they differ from the previous frame's on that stream,
// so a small message over shared memory fits one cache line.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "core/buffer_pool.h"
#include "mtf/transport.h"

namespace mtf::transport {

// 2: a refusal of an authenticated peer says why (MTFN); 3: names only
// when they change.
constexpr uint16_t kProtocolVersion = 3;
constexpr size_t kKindBytes = 16, kOpBytes = 32;
constexpr size_t kHeaderFixed = 40, kHeader = kHeaderFixed + kKindBytes + kOpBytes;
constexpr uint16_t kFlagBye = 1;    // the sender is done: its exit is not a crash
constexpr uint16_t kFlagNames = 2;  // kind and op follow the fixed part

struct FrameHeader {
  uint16_t flags = 0;
  uint64_t tag = 0, length = 0, seq = 0;
  int64_t call_bytes = 0;
  std::string kind, op;  // truncated to kKindBytes / kOpBytes

  // The header of a message sent during `call`.
  static FrameHeader for_call(const CollectiveCall& call, uint64_t tag, uint64_t length);
  // Writes the header, with the names when `names` (kHeader bytes) or
  // without (kHeaderFixed); returns the bytes written.
  size_t encode(char* out, bool names = true) const;
  // Whether a header whose fixed part is `in` goes on with the names.
  static bool has_names(const char* in);
  // Empty on success, else what is wrong with the bytes (kHeader of them
  // when has_names, else kHeaderFixed; kind and op are then left as they
  // were, the previous frame's).
  std::string decode(const char* in);
  std::string describe() const;
};

// A message with its payload. Payloads that arrive before their receive wait
// in pooled memory (detail::allocate_buffer): a fresh large buffer costs a
// page fault per 4 KiB, and memory handed back to the system and faulted in
// again made every 1 MiB allreduce over MPI stall for ~2.5 ms (measured).
struct Frame {
  FrameHeader h;
  std::shared_ptr<detail::Buffer> payload;  // at least h.length bytes

  // A frame for `h` with room for its payload.
  static Frame for_header(const FrameHeader& h) { return {h, detail::allocate_buffer(h.length)}; }
  char* data() const { return static_cast<char*>(payload->data); }
};

std::string describe_call(const CollectiveCall& call);
// ValueError naming both ranks and both calls unless a message sent in
// `h`'s call may be received in `mine` (checks skipped when either side is
// not in a numbered collective).
void check_same_call(int me, const CollectiveCall& mine, int peer, const FrameHeader& h);

// ValueError: rank `me`, in call `mine`, expected `want` bytes from `peer` on
// `tag` but the peer sent `got` (the ranks called different collectives or
// sizes).
[[noreturn]] void throw_size_mismatch(int me, const CollectiveCall& mine, int peer, uint64_t tag,
                                      size_t want, size_t got);

// A peer's messages that arrived before their receives, in arrival order.
// take() moves the first one on `tag` into `data` (checked against the
// receiver's call and size, as above); false when none is there.
class EarlyFrames {
 public:
  void push(Frame f) { frames_.push_back(std::move(f)); }
  bool take(int me, const CollectiveCall& mine, int peer, uint64_t tag, void* data, size_t bytes);
  // check_same_call for every waiting frame.
  void check_all(int me, const CollectiveCall& mine, int peer) const;
  bool has_tag(uint64_t tag) const;

 private:
  std::deque<Frame> frames_;
};

}  // namespace mtf::transport
