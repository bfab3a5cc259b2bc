// connect_tcp: rendezvous through rank 0 and authenticated connections
// between every pair of ranks (Boost.Asio for listeners and connections,
// HMAC-SHA-256 challenge-response both ways), then the transport of
// tcp_transport.cc on top.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/bytes.h"
#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/tcp_transport.h"
#include "transport/frames.h"
#include "transport/hmac.h"
#include "transport/socket_io.h"
#include "transport/tcp_connection.h"

namespace mtf {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using detail::str_cat;
using transport::Clock;
using transport::kProtocolVersion;
using transport::read_exact;
using transport::Refused;
using transport::wait_fd;
using transport::write_all;

constexpr size_t kNonce = 16;

void put_u16(std::string& s, uint16_t v) { detail::append(s, v); }
void put_u32(std::string& s, uint32_t v) { detail::append(s, v); }

std::string random_nonce() { return transport::random_bytes(kNonce); }

std::string digest_string(const transport::Digest& d) { return std::string(d.begin(), d.end()); }

std::string ranks_text(int client, int server, int world) {
  return str_cat(client, ",", server, ",", world);
}

// Client side: proves the token, checks the server does too. Returns nothing;
// Refused with the reason on failure.
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
  if (server != server_rank || static_cast<int>(detail::load<uint32_t>(ch + 12)) != world) {
    throw Refused(str_cat("expected rank ", server_rank, " of ", world, " but the peer is rank ",
                          server, " of ", detail::load<uint32_t>(ch + 12)));
  }
  const std::string nonce_s(ch + 16, kNonce);
  const transport::Digest want =
      transport::hmac_sha256(token, "server" + nonce_c + nonce_s + ranks_text(me, server, world));
  transport::Digest got;
  std::memcpy(got.data(), ch + 16 + kNonce, 32);
  if (!transport::digests_equal(want, got)) {
    throw Refused("the peer does not know the job token (MTF_JOB_TOKEN differs)");
  }
  std::string resp = "MTFR";
  resp += digest_string(
      transport::hmac_sha256(token, "client" + nonce_s + nonce_c + ranks_text(me, server, world)));
  write_all(fd, resp.data(), resp.size(), deadline);
  char ok[4];
  read_exact(fd, ok, 4, deadline);
  if (std::memcmp(ok, "MTFA", 4) != 0) throw Refused("the peer refused our handshake");
}

struct Admitted {
  int rank;
  std::string address;
};

// Server side: Refused unless the client proves the token and is a rank
// `accept(rank)` allows.
template <typename AcceptRank>
Admitted server_handshake(int fd, int me, int world, const std::string& token,
                          Clock::time_point deadline, AcceptRank accept_rank) {
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
  if (client_world != world) {
    throw Refused(str_cat("a rank of a job of ", client_world, " ranks, not ", world));
  }
  if (client < 0 || client >= world || client == me) {
    throw Refused(str_cat("rank ", client, " is out of range or our own"));
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
      transport::hmac_sha256(token, "server" + nonce_c + nonce_s + ranks_text(client, me, world)));
  write_all(fd, ch.data(), ch.size(), deadline);
  char resp[4 + 32];
  read_exact(fd, resp, sizeof(resp), deadline);
  transport::Digest got;
  std::memcpy(got.data(), resp + 4, 32);
  if (std::memcmp(resp, "MTFR", 4) != 0 ||
      !transport::digests_equal(
          got, transport::hmac_sha256(
                   token, "client" + nonce_s + nonce_c + ranks_text(client, me, world)))) {
    throw Refused(str_cat("a client claiming rank ", client, " does not know the job token"));
  }
  std::string why = accept_rank(client);
  if (!why.empty()) throw Refused(why);
  write_all(fd, "MTFA", 4, deadline);
  return {client, address};
}

std::pair<std::string, uint16_t> split_host_port(const std::string& s, const char* what) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    throw ValueError(str_cat(what, " \"", s, "\" must be host:port"));
  }
  const std::string port = s.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || p <= 0 || p > 65535) {
    throw ValueError(str_cat(what, " \"", s, "\" has a bad port"));
  }
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {host, static_cast<uint16_t>(p)};
}

tcp::endpoint resolve(asio::io_context& io, const std::string& host_port, const char* what) {
  auto [host, port] = split_host_port(host_port, what);
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    throw IoError(str_cat("cannot resolve ", what, " \"", host_port, "\": ", ec.message()));
  }
  return *results.begin();
}

// Connects to `ep`, retrying refusals (the listener may not be up yet)
// until the deadline.
tcp::socket connect_with_retry(asio::io_context& io, const tcp::endpoint& ep,
                               Clock::time_point deadline, const std::string& what) {
  std::string last;
  while (Clock::now() < deadline) {
    tcp::socket s(io);
    boost::system::error_code ec;
    s.open(ep.protocol(), ec);
    if (!ec) s.non_blocking(true, ec);
    if (!ec) {
      s.connect(ep, ec);
      if (ec == asio::error::in_progress || ec == asio::error::would_block) {
        if (wait_fd(s.native_handle(), POLLOUT,
                    std::min(deadline, Clock::now() + std::chrono::seconds(2)))) {
          int err = 0;
          socklen_t len = sizeof(err);
          ::getsockopt(s.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len);
          ec = boost::system::error_code(err, boost::system::system_category());
        } else {
          ec = asio::error::timed_out;
        }
      }
    }
    if (!ec) return s;
    last = ec.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw TimeoutError(str_cat("could not connect to ", what, " at ", ep.address().to_string(), ":",
                             ep.port(), " before the set-up deadline (last error: ", last,
                             "); is that rank running, with the same MTF_COORDINATOR?"));
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int env_int(const char* name, bool required, int fallback) {
  const std::string v = env(name);
  if (v.empty()) {
    if (required) throw ValueError(str_cat("environment variable ", name, " is not set"));
    return fallback;
  }
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 30)) {
    throw ValueError(str_cat("environment variable ", name, "=\"", v, "\" is not a number"));
  }
  return static_cast<int>(x);
}

void log_refusal(int me, const std::string& who, const std::string& why) {
  std::fprintf(stderr, "mtf rank %d: refused a connection from %s: %s\n", me, who.c_str(),
               why.c_str());
}

}  // namespace

bool TcpOptions::in_environment() {
  return !env("MTF_RANK").empty() && !env("MTF_WORLD_SIZE").empty();
}

TcpOptions TcpOptions::from_environment() {
  TcpOptions o;
  o.rank = env_int("MTF_RANK", true, 0);
  o.world_size = env_int("MTF_WORLD_SIZE", true, 0);
  o.local_size = env_int("MTF_LOCAL_WORLD_SIZE", false, 1);
  if (o.local_size < 1) throw ValueError("MTF_LOCAL_WORLD_SIZE must be at least 1");
  o.coordinator = env("MTF_COORDINATOR");
  o.token = env("MTF_JOB_TOKEN");
  if (!env("MTF_LISTEN_HOST").empty()) o.listen_host = env("MTF_LISTEN_HOST");
  o.timeout = std::chrono::milliseconds(env_int("MTF_TIMEOUT_MS", false, 60000));
  o.connect_timeout = std::chrono::milliseconds(env_int("MTF_CONNECT_TIMEOUT_MS", false, 60000));
  return o;
}

std::unique_ptr<Transport> connect_tcp(const TcpOptions& o) {
  if (o.world_size < 1)
    throw ValueError(str_cat("TCP transport: world size ", o.world_size, " < 1"));
  if (o.rank < 0 || o.rank >= o.world_size) {
    throw ValueError(str_cat("TCP transport: rank ", o.rank, " is outside 0..", o.world_size - 1));
  }
  if (o.token.size() < 8) {
    throw ValueError(
        "TCP transport: the job token (MTF_JOB_TOKEN) must have at least 8 "
        "characters; launchers make a random one");
  }
  if (o.world_size > 1 && o.coordinator.empty()) {
    throw ValueError("TCP transport: MTF_COORDINATOR (host:port of rank 0) is not set");
  }
  auto io = std::make_unique<asio::io_context>();
  const int me = o.rank, world = o.world_size;
  std::vector<tcp::socket> sockets;
  for (int i = 0; i < world; ++i) sockets.emplace_back(*io);
  if (world == 1) return transport::make_tcp_transport(o, std::move(sockets), std::move(io));
  const Clock::time_point deadline = Clock::now() + o.connect_timeout;

  // Our listener: rank 0 on the coordinator address, the others anywhere on
  // the listen host.
  tcp::acceptor acceptor(*io);
  tcp::endpoint listen_ep = me == 0 ? resolve(*io, o.coordinator, "MTF_COORDINATOR")
                                    : tcp::endpoint(asio::ip::make_address(o.listen_host), 0);
  boost::system::error_code ec;
  acceptor.open(listen_ep.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(listen_ep, ec);
  if (!ec) acceptor.listen(64, ec);
  if (!ec) acceptor.non_blocking(true, ec);
  if (ec) {
    throw IoError(str_cat("rank ", me, " cannot listen on ", listen_ep.address().to_string(), ":",
                          listen_ep.port(), ": ", ec.message()));
  }
  const std::string my_address = str_cat(
      o.listen_host.find(':') != std::string::npos ? "[" + o.listen_host + "]" : o.listen_host, ":",
      acceptor.local_endpoint().port());

  // Accepts authenticated ranks until `want` are in; refusals are logged.
  auto accept_ranks = [&](int want, auto allowed, std::vector<std::string>* addresses) {
    int joined = 0;
    while (joined < want) {
      if (!wait_fd(acceptor.native_handle(), POLLIN, deadline)) {
        std::string missing;
        for (int r = 0; r < world; ++r)
          if (r != me && !sockets[r].is_open() && allowed(r).empty())
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        throw TimeoutError(str_cat("rank ", me, ": ranks ", missing,
                                   " did not connect before the set-up deadline (",
                                   o.connect_timeout.count(), " ms)"));
      }
      tcp::socket s(*io);
      acceptor.accept(s, ec);
      if (ec) continue;
      s.non_blocking(true, ec);
      std::string who = "?";
      try {
        who = s.remote_endpoint().address().to_string();
      } catch (const std::exception&) {
      }
      try {
        Admitted a =
            server_handshake(s.native_handle(), me, world, o.token,
                             std::min(deadline, Clock::now() + o.handshake_timeout), [&](int r) {
                               if (sockets[r].is_open())
                                 return str_cat("rank ", r, " is already connected");
                               return allowed(r);
                             });
        if (addresses) (*addresses)[a.rank] = a.address;
        sockets[a.rank] = std::move(s);
        ++joined;
      } catch (const Refused& e) {
        log_refusal(me, who, e.what());
      }
    }
  };

  std::vector<std::string> addresses(world);
  if (me == 0) {
    accept_ranks(
        world - 1, [](int r) { return r >= 1 ? std::string() : std::string("rank 0?"); },
        &addresses);
    addresses[0] = o.coordinator;
    std::string table = "MTFT";
    put_u32(table, static_cast<uint32_t>(world));
    for (const auto& a : addresses) {
      put_u16(table, static_cast<uint16_t>(a.size()));
      table += a;
    }
    for (int r = 1; r < world; ++r) {
      try {
        write_all(sockets[r].native_handle(), table.data(), table.size(), deadline);
      } catch (const Refused& e) {
        throw IoError(
            str_cat("rank 0 could not send the address table to rank ", r, ": ", e.what()));
      }
    }
  } else {
    const tcp::endpoint coord = resolve(*io, o.coordinator, "MTF_COORDINATOR");
    try {
      sockets[0] = connect_with_retry(*io, coord, deadline, "rank 0 (the coordinator)");
      client_handshake(sockets[0].native_handle(), me, world, 0, o.token, my_address,
                       std::min(deadline, Clock::now() + o.handshake_timeout + o.connect_timeout));
      char head[8];
      read_exact(sockets[0].native_handle(), head, 8, deadline);
      if (std::memcmp(head, "MTFT", 4) != 0 ||
          detail::load<uint32_t>(head + 4) != static_cast<uint32_t>(world))
        throw Refused("a malformed address table");
      for (int r = 0; r < world; ++r) {
        uint16_t len = 0;
        read_exact(sockets[0].native_handle(), &len, 2, deadline);
        addresses[r].assign(len, '\0');
        if (len) read_exact(sockets[0].native_handle(), addresses[r].data(), len, deadline);
      }
    } catch (const Refused& e) {
      throw IoError(str_cat("rank ", me, " could not join through the coordinator ", o.coordinator,
                            ": ", e.what()));
    }
    for (int r = 1; r < me; ++r) {
      const tcp::endpoint ep = resolve(*io, addresses[r], "a rank's address");
      sockets[r] = connect_with_retry(*io, ep, deadline, str_cat("rank ", r));
      try {
        client_handshake(sockets[r].native_handle(), me, world, r, o.token, "",
                         std::min(deadline, Clock::now() + o.handshake_timeout));
      } catch (const Refused& e) {
        throw IoError(str_cat("rank ", me, " could not connect to rank ", r, " at ", addresses[r],
                              ": ", e.what()));
      }
    }
    accept_ranks(
        world - 1 - me,
        [&](int r) {
          return r > me ? std::string() : str_cat("rank ", r, " should not connect to rank ", me);
        },
        nullptr);
  }
  acceptor.close(ec);
  return transport::make_tcp_transport(o, std::move(sockets), std::move(io));
}

}  // namespace mtf
