// Fuzzes what a multi-process transport reads from a peer before it trusts
// it: a message header (FrameHeader::decode, with and without the call's
// names) and rank 0's address table (decode_address_table). A header that
// decodes must encode to the same bytes, and describe itself.
#include <cstring>

#include "fuzz_input.h"
#include "transport/address_table.h"
#include "transport/frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtf;
  using namespace mtf::transport;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  if (mode & 1) {
    // The address table of a world of 1-16 ranks, read from the bytes.
    const int world = 1 + (mode >> 1) % 16;
    size_t pos = 0;
    try {
      const std::vector<std::string> table = decode_address_table(world, [&](void* out, size_t n) {
        if (n > size - pos) throw Refused("end of stream");
        std::memcpy(out, data + pos, n);
        pos += n;
      });
      if (static_cast<int>(table.size()) != world) std::abort();
      const std::string again = encode_address_table(table);
      if (again.size() != pos || std::memcmp(again.data(), data, pos) != 0) std::abort();
    } catch (const Refused&) {
    }
    return 0;
  }
  char in[kHeader] = {};
  std::memcpy(in, data, std::min(size, sizeof(in)));
  FrameHeader h;
  const std::string why = h.decode(in);
  if (!why.empty()) return 0;
  h.describe();
  const bool names = FrameHeader::has_names(in);
  char out[kHeader] = {};
  const size_t n = h.encode(out, names);
  if (n != (names ? kHeader : kHeaderFixed)) std::abort();
  FrameHeader back;
  if (!back.decode(out).empty() || back.tag != h.tag || back.length != h.length ||
      back.seq != h.seq || back.call_bytes != h.call_bytes || back.flags != h.flags ||
      (names && (back.kind != h.kind || back.op != h.op)))
    std::abort();
  return 0;
}
