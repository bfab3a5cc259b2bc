// address_table.h — the table rank 0 sends every rank during TCP
// rendezvous: each rank's listening address, by rank. Encoder and decoder
// side by side, as frames.h keeps the message header's.
//
// Layout: "MTFT", the world size (u32, little-endian), then per rank a u16
// length and that many bytes of "host:port".
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "transport/socket_io.h"

namespace mtf::transport {

inline std::string encode_address_table(const std::vector<std::string>& addresses) {
  std::string table = "MTFT";
  detail::append(table, static_cast<uint32_t>(addresses.size()));
  for (const std::string& a : addresses) {
    detail::append(table, static_cast<uint16_t>(a.size()));
    table += a;
  }
  return table;
}

// Reads a table for `world` ranks through `read(buffer, bytes)` (which
// fills exactly `bytes` or throws). Refused for a table that is not one, or
// is for another world size.
inline std::vector<std::string> decode_address_table(
    int world, const std::function<void(void*, size_t)>& read) {
  char head[8];
  read(head, sizeof(head));
  if (std::memcmp(head, "MTFT", 4) != 0 ||
      detail::load<uint32_t>(head + 4) != static_cast<uint32_t>(world))
    throw Refused("a malformed address table");
  std::vector<std::string> addresses(static_cast<size_t>(world));
  for (std::string& a : addresses) {
    uint16_t len = 0;
    read(&len, sizeof(len));
    a.assign(len, '\0');
    if (len) read(a.data(), len);
  }
  return addresses;
}

}  // namespace mtf::transport
