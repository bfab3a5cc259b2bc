// The rendezvous address table: what encode writes, decode reads back, and
// a table for another world size, or not a table, is refused.
#include "transport/address_table.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mtf::transport {
namespace {

// A reader over `bytes` that fills exactly what is asked, or throws.
std::function<void(void*, size_t)> reader(const std::string& bytes) {
  auto at = std::make_shared<size_t>(0);
  return [bytes, at](void* data, size_t n) {
    if (*at + n > bytes.size()) throw Refused("the table ended early");
    std::copy_n(bytes.data() + *at, n, static_cast<char*>(data));
    *at += n;
  };
}

TEST(AddressTable, RoundTrips) {
  const std::vector<std::string> addresses = {"10.0.0.1:4000", "", "[::1]:5000"};
  const std::string table = encode_address_table(addresses);
  EXPECT_EQ(table.substr(0, 4), "MTFT");
  EXPECT_EQ(decode_address_table(3, reader(table)), addresses);
}

TEST(AddressTable, AnotherWorldOrNotATableIsRefused) {
  const std::string table = encode_address_table({"a:1", "b:2"});
  EXPECT_THROW(decode_address_table(3, reader(table)), Refused);
  EXPECT_THROW(decode_address_table(2, reader("HTTP/1.1 200 OK")), Refused);
  EXPECT_THROW(decode_address_table(2, reader(table.substr(0, table.size() - 1))), Refused);
}

}  // namespace
}  // namespace mtf::transport
