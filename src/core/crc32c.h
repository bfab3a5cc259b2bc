// crc32c.h — CRC-32C (Castagnoli) of a byte range: with SSE4.2's crc32
// instruction where the CPU has it, three streams at once (the
// instruction's latency is three times its issue rate), and by
// slicing-by-8 tables otherwise. Internal (checkpoints, TensorBoard records).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mtf {

// crc32c(a + b) == crc32c(b, size_b, crc32c(a, size_a, 0)).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The same by tables alone (what CPUs without SSE4.2 run; the tests hold
// the two to each other).
uint32_t crc32c_portable(const void* data, size_t size, uint32_t crc = 0);

}  // namespace mtf
