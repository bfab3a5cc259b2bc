// Fuzzes the TCP transport's handshake, both sides, against a peer that
// sends the input's bytes and then closes: the first byte picks the side
// (and the ranks), the rest is the stream. The peer cannot know the job
// token, so every outcome must be a refusal (Refused) or an error of
// mtf's, never an admission, a crash or a hang.
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "transport/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtf::transport;
  if (size < 1 || size > 60000) return 0;  // the stream fits the socket's buffer
  const uint8_t mode = data[0];
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  if (size > 1 && ::write(fds[1], data + 1, size - 1) != static_cast<ssize_t>(size - 1))
    std::abort();
  ::shutdown(fds[1], SHUT_WR);  // then end of stream
  const int world = 2 + (mode >> 1) % 4;
  const int me = (mode >> 3) % world;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(200);
  const std::string token = "fuzzing-token-0123456789";
  try {
    if (mode & 1) {
      server_handshake(fds[0], me, world, token, deadline, [](int) { return std::string(); });
    } else {
      client_handshake(fds[0], me, world, (me + 1) % world, token, "127.0.0.1:1234", deadline);
    }
    std::abort();  // admitted without the token
  } catch (const Refused&) {
  } catch (const JobConflict&) {
    std::abort();  // only a peer that proved the token may conflict
  } catch (const mtf::Error&) {
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
