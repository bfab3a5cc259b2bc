#include "transport/socket_io.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace mtf::transport {

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the read/write report it
  }
}

void read_exact(int fd, void* buf, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::recv(fd, static_cast<char*>(buf) + done, n - done, 0);
    if (r > 0) {
      done += static_cast<size_t>(r);
    } else if (r == 0) {
      throw Refused("the connection closed during the handshake");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait_fd(fd, POLLIN, deadline)) throw Refused("the handshake timed out");
    } else {
      throw Refused(std::string("reading the handshake failed: ") + std::strerror(errno));
    }
  }
}

void write_all(int fd, const void* buf, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::send(fd, static_cast<const char*>(buf) + done, n - done, MSG_NOSIGNAL);
    if (r >= 0) {
      done += static_cast<size_t>(r);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait_fd(fd, POLLOUT, deadline)) throw Refused("the handshake timed out");
    } else {
      throw Refused(std::string("writing the handshake failed: ") + std::strerror(errno));
    }
  }
}

}  // namespace mtf::transport
