#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mtf {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: t[0] is the byte-at-a-time table, t[k][i] the CRC
// register after byte i and k zero bytes.
struct SliceTables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  SliceTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (int k = 1; k < 8; ++k)
      for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
};

const SliceTables& slice_tables() {
  static const SliceTables tables;
  return tables;
}

#if defined(__x86_64__)
// a * b modulo the polynomial, both reflected (bit 31 is x^0).
uint32_t multiply_mod_poly(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: what running `bytes` zero bytes
// through the CRC register multiplies it by.
uint32_t x_to_8n(size_t bytes) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t square = 1u << 23;  // x^8
  for (size_t n = bytes; n != 0; n >>= 1) {
    if (n & 1) result = multiply_mod_poly(square, result);
    square = multiply_mod_poly(square, square);
  }
  return result;
}

// Multiplying a register by x^(8 * lane) in four table look-ups (the
// product is linear in the register's bytes).
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};
  explicit ShiftTable(size_t lane) {
    const uint32_t k = x_to_8n(lane);
    for (int j = 0; j < 4; ++j)
      for (uint32_t b = 0; b < 256; ++b) t[j][b] = multiply_mod_poly(k, b << (8 * j));
  }
  uint32_t shift(uint32_t c) const {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
  }
};

constexpr size_t kLongLane = 4096, kShortLane = 256;

// The crc32 instruction takes 3 cycles and starts one a cycle: three lanes
// of `lane` bytes run at once from registers c, 0 and 0, and the second and
// third are folded in as register(a + b) = shift(register(a)) ^ register(b).
__attribute__((target("sse4.2"))) uint64_t crc_three_lanes(const uint8_t*& p, size_t& n, uint64_t c,
                                                           size_t lane, const ShiftTable& shift) {
  while (n >= 3 * lane) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < lane; i += 8) {
      uint64_t v0, v1, v2;
      std::memcpy(&v0, p + i, 8);
      std::memcpy(&v1, p + lane + i, 8);
      std::memcpy(&v2, p + 2 * lane + i, 8);
      c = _mm_crc32_u64(c, v0);
      c1 = _mm_crc32_u64(c1, v1);
      c2 = _mm_crc32_u64(c2, v2);
    }
    c = shift.shift(static_cast<uint32_t>(c)) ^ c1;
    c = shift.shift(static_cast<uint32_t>(c)) ^ c2;
    p += 3 * lane;
    n -= 3 * lane;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t crc_sse42(const uint8_t* p, size_t n, uint32_t crc) {
  static const ShiftTable long_shift(kLongLane), short_shift(kShortLane);
  uint64_t c = ~crc;
  c = crc_three_lanes(p, n, c, kLongLane, long_shift);
  c = crc_three_lanes(p, n, c, kShortLane, short_shift);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc) {
  const auto& t = slice_tables().t;
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    v ^= c;
    c = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
        t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
  }
#endif
  while (size--) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return crc_sse42(static_cast<const uint8_t*>(data), size, crc);
#endif
  return crc32c_portable(data, size, crc);
}

}  // namespace mtf
