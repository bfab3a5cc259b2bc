// CRC-32C: published check values, and the fast path (three streams of the
// crc32 instruction, folded together) against the tables on every length
// and alignment that reaches each of its parts.
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using mtf::crc32c;
using mtf::crc32c_portable;

TEST(Crc32c, PublishedCheckValues) {
  // The catalogue's check value, and RFC 3720's (iSCSI) test patterns.
  const std::string digits = "123456789";
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  for (auto f : {&crc32c, &crc32c_portable}) {
    EXPECT_EQ(f(digits.data(), digits.size(), 0), 0xE3069283u);
    EXPECT_EQ(f(zeros.data(), zeros.size(), 0), 0x8A9136AAu);
    EXPECT_EQ(f(ones.data(), ones.size(), 0), 0x62A8AB43u);
    EXPECT_EQ(f(up.data(), up.size(), 0), 0x46DD794Eu);
    EXPECT_EQ(f(down.data(), down.size(), 0), 0x113FDB5Cu);
    EXPECT_EQ(f(nullptr, 0, 0), 0u);
  }
}

TEST(Crc32c, FastPathMatchesTablesOnEveryShape) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(3 * 4096 * 3 + 3 * 256 * 2 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  // Lengths around the long (3 x 4096) and short (3 x 256) blocks and the
  // 8-byte words, at every offset within a word.
  std::vector<size_t> sizes;
  for (size_t base : {size_t{0}, size_t{768}, size_t{12288}, size_t{24576}, size_t{36864}})
    for (size_t d = 0; d < 20; ++d) {
      sizes.push_back(base + d);
      if (base >= d) sizes.push_back(base - d);
    }
  for (int i = 0; i < 200; ++i) sizes.push_back(rng() % (buf.size() - 8));
  for (size_t size : sizes)
    for (size_t offset = 0; offset < 8; ++offset) {
      ASSERT_LE(offset + size, buf.size());
      const uint32_t seed = static_cast<uint32_t>(size * 2654435761u);
      ASSERT_EQ(crc32c(buf.data() + offset, size, seed),
                crc32c_portable(buf.data() + offset, size, seed))
          << "size " << size << " offset " << offset;
    }
}

TEST(Crc32c, ChainsAcrossCalls) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(100000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const uint32_t whole = crc32c(buf.data(), buf.size());
  for (size_t cut : {size_t{1}, size_t{7}, size_t{12288}, size_t{50001}, size_t{99999}}) {
    EXPECT_EQ(crc32c(buf.data() + cut, buf.size() - cut, crc32c(buf.data(), cut)), whole);
    EXPECT_EQ(crc32c_portable(buf.data() + cut, buf.size() - cut, crc32c_portable(buf.data(), cut)),
              whole);
  }
}

}  // namespace
