// socket_io.h — blocking reads and writes of whole buffers on non-blocking
// sockets with a deadline, for the TCP transport's handshakes and goodbye
// frames. Failures are `Refused` (a connection to drop, with the reason).
// Internal.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace mtf::transport {

using Clock = std::chrono::steady_clock;

struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Milliseconds left until `deadline` (0 when past), for poll().
int remaining_ms(Clock::time_point deadline);
// Waits for `events` on fd until `deadline`; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline);
void read_exact(int fd, void* buf, size_t n, Clock::time_point deadline);
void write_all(int fd, const void* buf, size_t n, Clock::time_point deadline);

}  // namespace mtf::transport
