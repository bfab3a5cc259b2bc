#include "transport/frames.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"
#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::transport {
FrameHeader FrameHeader::for_call(const CollectiveCall& call, uint64_t tag, uint64_t length) {
  FrameHeader h;
  h.tag = tag;
  h.length = length;
  h.seq = call.seq;
  h.call_bytes = call.bytes;
  h.kind = call.kind.substr(0, kKindBytes);
  h.op = call.op.substr(0, kOpBytes);
  return h;
}

size_t FrameHeader::encode(char* out, bool names) const {
  const uint16_t f = names ? flags | kFlagNames : flags & ~kFlagNames;
  std::memcpy(out, "MTFD", 4);
  std::memcpy(out + 4, &kProtocolVersion, 2);
  std::memcpy(out + 6, &f, 2);
  std::memcpy(out + 8, &tag, 8);
  std::memcpy(out + 16, &length, 8);
  std::memcpy(out + 24, &seq, 8);
  std::memcpy(out + 32, &call_bytes, 8);
  if (!names) return kHeaderFixed;
  std::memset(out + kHeaderFixed, 0, kKindBytes + kOpBytes);
  std::memcpy(out + 40, kind.data(), std::min(kind.size(), kKindBytes));
  std::memcpy(out + 56, op.data(), std::min(op.size(), kOpBytes));
  return kHeader;
}

bool FrameHeader::has_names(const char* in) {
  return (detail::load<uint16_t>(in + 6) & kFlagNames) != 0;
}

std::string FrameHeader::decode(const char* in) {
  if (std::memcmp(in, "MTFD", 4) != 0) return "a frame without the MTFD mark";
  if (detail::load<uint16_t>(in + 4) != kProtocolVersion)
    return "a frame of another protocol version";
  flags = detail::load<uint16_t>(in + 6);
  tag = detail::load<uint64_t>(in + 8);
  length = detail::load<uint64_t>(in + 16);
  seq = detail::load<uint64_t>(in + 24);
  call_bytes = detail::load<int64_t>(in + 32);
  if (flags & kFlagNames) {
    kind.assign(in + 40, strnlen(in + 40, kKindBytes));
    op.assign(in + 56, strnlen(in + 56, kOpBytes));
  }
  return "";
}

std::string FrameHeader::describe() const {
  if (kind.empty() && seq == 0) return "a direct call";
  return detail::str_cat(kind, " #", seq, " (op \"", op, "\"), ", call_bytes, " bytes");
}

void throw_size_mismatch(int me, const CollectiveCall& mine, int peer, uint64_t tag, size_t want,
                         size_t got) {
  throw ValueError(detail::str_cat("rank ", me, " expected ", want, " bytes from rank ", peer,
                                   " (tag ", tag, ") in ", describe_call(mine), " but rank ", peer,
                                   " sent ", got,
                                   "; the ranks called different collectives or sizes"));
}

bool EarlyFrames::take(int me, const CollectiveCall& mine, int peer, uint64_t tag, void* data,
                       size_t bytes) {
  for (auto it = frames_.begin(); it != frames_.end(); ++it) {
    if (it->h.tag != tag) continue;
    check_same_call(me, mine, peer, it->h);
    if (it->h.length != bytes) throw_size_mismatch(me, mine, peer, tag, bytes, it->h.length);
    if (bytes) std::memcpy(data, it->data(), bytes);
    frames_.erase(it);
    return true;
  }
  return false;
}

void EarlyFrames::check_all(int me, const CollectiveCall& mine, int peer) const {
  for (const Frame& f : frames_) check_same_call(me, mine, peer, f.h);
}

bool EarlyFrames::has_tag(uint64_t tag) const {
  for (const Frame& f : frames_)
    if (f.h.tag == tag) return true;
  return false;
}

std::string describe_call(const CollectiveCall& c) {
  if (c.seq == 0) return "a direct call";
  return detail::str_cat(c.kind, " #", c.seq, " (op \"", c.op, "\"), ", c.bytes, " bytes");
}

void check_same_call(int me, const CollectiveCall& c, int peer, const FrameHeader& h) {
  if (c.seq == 0 || h.seq == 0) return;
  const bool same = h.seq == c.seq && h.kind == c.kind.substr(0, kKindBytes) &&
                    h.op == c.op.substr(0, kOpBytes) && h.call_bytes == c.bytes;
  if (!same) {
    throw ValueError(detail::str_cat("ranks diverged: rank ", me, " is in ", describe_call(c),
                                     " but rank ", peer, " sent a message for ", h.describe(),
                                     "; every rank must call the same collectives in the same "
                                     "order"));
  }
}

}  // namespace mtf::transport
