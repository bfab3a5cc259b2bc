// handshake.h — the two sides of the TCP transport's connection handshake:
// each proves it knows the job token (HMAC-SHA-256 over both nonces and the
// ranks, challenge-response both ways), then the server accepts the client's
// rank or says why not. Internal; used by the rendezvous (tcp_rendezvous.cc).
//
// Client: "MTFH", version u16, address length u16, rank u32, world u32,
// nonce (16), address. Server: "MTFC", version, 0 u16, rank u32, world u32,
// nonce (16), proof (32). Client: "MTFR" and its proof (or "MTFW": it will
// not go on). Server: "MTFA", or "MTFN", a u16 length and why.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "transport/socket_io.h"

namespace mtf::transport {

// An authenticated peer (it knows the job token) that disagrees with us about
// the job: two processes claiming one rank, different world sizes. Fatal on
// both sides, at once: waiting would only end at the deadline.
struct JobConflict : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Client side: proves the token, checks the server does too, and reads the
// server's verdict. Refused when the peer is not a rank of this job (a
// connection to drop); JobConflict when it is, but the two disagree.
void client_handshake(int fd, int me, int world, int server_rank, const std::string& token,
                      const std::string& my_address, Clock::time_point deadline);

struct Admitted {
  int rank;
  std::string address;
};

// Server side: Refused unless the client proves the token (the connection is
// dropped and logged); once it has, JobConflict when it disagrees with us
// about the job or `accept_rank(rank)` gives a reason (the client is told
// why before we fail).
Admitted server_handshake(int fd, int me, int world, const std::string& token,
                          Clock::time_point deadline,
                          const std::function<std::string(int)>& accept_rank);

}  // namespace mtf::transport
