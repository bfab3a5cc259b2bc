// The TCP transport's connection handshake (handshake.h).
#include "transport/handshake.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"
#include "core/check.h"
#include "transport/frames.h"
#include "transport/hmac.h"

namespace mtf::transport {
namespace {

using detail::str_cat;

constexpr size_t kNonce = 16;

void put_u16(std::string& s, uint16_t v) { detail::append(s, v); }
void put_u32(std::string& s, uint32_t v) { detail::append(s, v); }

std::string random_nonce() { return random_bytes(kNonce); }

std::string digest_string(const Digest& d) { return std::string(d.begin(), d.end()); }

std::string ranks_text(int client, int server, int world) {
  return str_cat(client, ",", server, ",", world);
}

}  // namespace

// Client side: proves the token, checks the server does too, and reads the
// server's verdict. Refused when the peer is not a rank of this job (a
// connection to drop); JobConflict when it is, but the two disagree.
void client_handshake(int fd, int me, int world, int server_rank, const std::string& token,
                      const std::string& my_address, Clock::time_point deadline) {
  const std::string nonce_c = random_nonce();
  std::string hello = "MTFH";
  put_u16(hello, kProtocolVersion);
  put_u16(hello, static_cast<uint16_t>(my_address.size()));
  put_u32(hello, static_cast<uint32_t>(me));
  put_u32(hello, static_cast<uint32_t>(world));
  hello += nonce_c;
  hello += my_address;
  write_all(fd, hello.data(), hello.size(), deadline);
  char ch[4 + 2 + 2 + 4 + 4 + kNonce + 32];
  read_exact(fd, ch, sizeof(ch), deadline);
  if (std::memcmp(ch, "MTFC", 4) != 0 || detail::load<uint16_t>(ch + 4) != kProtocolVersion) {
    throw Refused("the peer is not an mtf rank of this protocol version");
  }
  const int server = static_cast<int>(detail::load<uint32_t>(ch + 8));
  const int server_world = static_cast<int>(detail::load<uint32_t>(ch + 12));
  const std::string nonce_s(ch + 16, kNonce);
  const Digest want =
      hmac_sha256(token, "server" + nonce_c + nonce_s + ranks_text(me, server, world));
  Digest got;
  std::memcpy(got.data(), ch + 16 + kNonce, 32);
  if (!digests_equal(want, got)) {
    // Tell the server why we leave (no proof of ours: the server may be
    // anyone), so that its log names the real cause.
    try {
      write_all(fd, "MTFW", 4, deadline);
    } catch (const Refused&) {
    }
    throw Refused("the peer does not know the job token (MTF_JOB_TOKEN differs)");
  }
  std::string resp = "MTFR";
  resp += digest_string(
      hmac_sha256(token, "client" + nonce_s + nonce_c + ranks_text(me, server, world)));
  write_all(fd, resp.data(), resp.size(), deadline);
  char verdict[4];
  read_exact(fd, verdict, 4, deadline);
  if (std::memcmp(verdict, "MTFN", 4) == 0) {
    uint16_t len = 0;
    read_exact(fd, &len, 2, deadline);
    std::string why(len, '\0');
    if (len) read_exact(fd, why.data(), len, deadline);
    throw JobConflict(why);
  }
  if (std::memcmp(verdict, "MTFA", 4) != 0) throw Refused("the peer refused our handshake");
  if (server != server_rank || server_world != world) {
    throw JobConflict(str_cat("expected rank ", server_rank, " of a job of ", world,
                              " processes, but the peer is rank ", server, " of ", server_world));
  }
}

// Server side: Refused unless the client proves the token (the connection is
// dropped and logged); once it has, JobConflict when it disagrees with us
// about the job or `accept_rank(rank)` gives a reason (the client is told
// why before we fail).
Admitted server_handshake(int fd, int me, int world, const std::string& token,
                          Clock::time_point deadline,
                          const std::function<std::string(int)>& accept_rank) {
  char hello[4 + 2 + 2 + 4 + 4 + kNonce];
  read_exact(fd, hello, sizeof(hello), deadline);
  if (std::memcmp(hello, "MTFH", 4) != 0) throw Refused("not an mtf handshake (garbage)");
  if (detail::load<uint16_t>(hello + 4) != kProtocolVersion)
    throw Refused("another protocol version");
  const uint16_t addr_len = detail::load<uint16_t>(hello + 6);
  const int client = static_cast<int>(detail::load<uint32_t>(hello + 8));
  const int client_world = static_cast<int>(detail::load<uint32_t>(hello + 12));
  if (addr_len > 255) throw Refused(str_cat("an address of ", addr_len, " bytes (at most 255)"));
  std::string address(addr_len, '\0');
  if (addr_len) read_exact(fd, address.data(), addr_len, deadline);
  if (client_world < 1 || client < 0 || client >= client_world) {
    throw Refused(str_cat("rank ", client, " of a job of ", client_world, " is out of range"));
  }
  const std::string nonce_c(hello + 16, kNonce);
  const std::string nonce_s = random_nonce();
  std::string ch = "MTFC";
  put_u16(ch, kProtocolVersion);
  put_u16(ch, 0);
  put_u32(ch, static_cast<uint32_t>(me));
  put_u32(ch, static_cast<uint32_t>(world));
  ch += nonce_s;
  ch += digest_string(
      hmac_sha256(token, "server" + nonce_c + nonce_s + ranks_text(client, me, client_world)));
  write_all(fd, ch.data(), ch.size(), deadline);
  char resp[4 + 32];
  read_exact(fd, resp, 4, deadline);
  if (std::memcmp(resp, "MTFW", 4) == 0) {
    throw Refused(str_cat("a client claiming rank ", client,
                          " has another job token (MTF_JOB_TOKEN differs)"));
  }
  read_exact(fd, resp + 4, sizeof(resp) - 4, deadline);
  Digest got;
  std::memcpy(got.data(), resp + 4, 32);
  if (std::memcmp(resp, "MTFR", 4) != 0 ||
      !digests_equal(got, hmac_sha256(token, "client" + nonce_s + nonce_c +
                                                 ranks_text(client, me, client_world)))) {
    throw Refused(str_cat("a client claiming rank ", client, " does not know the job token"));
  }
  std::string why;
  if (client_world != world) {
    why = str_cat("rank ", client, " is in a job of ", client_world, " processes but rank ", me,
                  " in one of ", world,
                  ": do all nodes give the same --nnodes and --nproc_per_node (MTF_WORLD_SIZE)?");
  } else if (client == me) {
    why = str_cat("two processes claim rank ", me,
                  ": does every node have its own --node_rank (MTF_RANK)?");
  } else {
    why = accept_rank(client);
  }
  if (!why.empty()) {
    std::string no = "MTFN";
    put_u16(no, static_cast<uint16_t>(std::min<size_t>(why.size(), 4000)));
    no += why.substr(0, 4000);
    try {
      write_all(fd, no.data(), no.size(), deadline);
    } catch (const Refused&) {
      // The client is told if it can be; the job fails either way.
    }
    throw JobConflict(why);
  }
  write_all(fd, "MTFA", 4, deadline);
  return {client, address};
}

}  // namespace mtf::transport
