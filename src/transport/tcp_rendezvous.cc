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
#include <functional>
#include <optional>
#include <thread>

#include "core/bytes.h"
#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/job_environment.h"
#include "mtf/tcp_transport.h"
#include "transport/address_table.h"
#include "transport/frames.h"
#include "transport/handshake.h"
#include "transport/socket_io.h"
#include "transport/tcp_connection.h"

namespace mtf {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using detail::str_cat;
using transport::Admitted;
using transport::client_handshake;
using transport::Clock;
using transport::JobConflict;
using transport::kProtocolVersion;
using transport::read_exact;
using transport::Refused;
using transport::server_handshake;
using transport::wait_fd;
using transport::write_all;

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

// The address `host` names: the first IPv4 one when there is one (every
// process of a job picks the same), else the first. IoError naming `what`.
asio::ip::address resolve_host(asio::io_context& io, const std::string& host, const char* what) {
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    throw IoError(str_cat("cannot resolve ", what, " \"", host,
                          "\": ", ec ? ec.message() : "no addresses",
                          "; is the name right, and known to this machine (DNS or /etc/hosts)?"));
  }
  for (const auto& r : results)
    if (r.endpoint().address().is_v4()) return r.endpoint().address();
  return results.begin()->endpoint().address();
}

tcp::endpoint resolve(asio::io_context& io, const std::string& host_port, const char* what) {
  auto [host, port] = split_host_port(host_port, what);
  return tcp::endpoint(resolve_host(io, host, what), port);
}

// The address this machine sends from to reach `to` (the kernel's choice of
// interface, asked with a UDP socket that sends nothing).
asio::ip::address route_source(asio::io_context& io, const tcp::endpoint& to) {
  asio::ip::udp::socket probe(io);
  boost::system::error_code ec;
  probe.open(to.protocol() == tcp::v4() ? asio::ip::udp::v4() : asio::ip::udp::v6(), ec);
  if (!ec) probe.connect(asio::ip::udp::endpoint(to.address(), to.port()), ec);
  if (ec) {
    throw IoError(str_cat("no route from this machine to the coordinator ",
                          to.address().to_string(), ": ", ec.message(),
                          "; set MTF_LISTEN_HOST to this machine's address"));
  }
  return probe.local_endpoint().address();
}

std::string address_text(const asio::ip::address& a, uint16_t port) {
  return a.is_v6() ? str_cat("[", a.to_string(), "]:", port) : str_cat(a.to_string(), ":", port);
}

// Where a rank listens, and the address it gives the others. Rank 0 listens
// on the coordinator's port: on MTF_LISTEN_HOST when set, on the
// coordinator's own loopback address for a job on one machine, else on every
// interface (the name the others use may resolve elsewhere to another
// address, as a machine's own name does on Debian: 127.0.1.1). The others
// listen on a free port of MTF_LISTEN_HOST, or by default of the interface
// that reaches the coordinator, and advertise that interface's address (also
// when MTF_LISTEN_HOST is a wildcard such as 0.0.0.0).
struct ListenPlan {
  tcp::endpoint bind;
  std::string advertise;  // empty for rank 0: its address is the coordinator's
};

ListenPlan plan_listening(asio::io_context& io, const TcpOptions& o) {
  const tcp::endpoint coordinator = resolve(io, o.coordinator, "MTF_COORDINATOR");
  std::optional<asio::ip::address> listen;
  if (!o.listen_host.empty()) {
    std::string host = o.listen_host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    listen = resolve_host(io, host, "MTF_LISTEN_HOST");
  }
  if (o.rank == 0) {
    if (listen) return {tcp::endpoint(*listen, coordinator.port()), ""};
    const bool one_machine = o.local_size >= o.world_size;
    if (coordinator.address().is_loopback() && one_machine) return {coordinator, ""};
    return {tcp::endpoint(coordinator.protocol(), coordinator.port()), ""};
  }
  if (listen && !listen->is_unspecified()) {
    return {tcp::endpoint(*listen, 0), listen->to_string()};
  }
  const asio::ip::address source = route_source(io, coordinator);
  if (listen) return {tcp::endpoint(*listen, 0), source.to_string()};
  return {tcp::endpoint(source, 0), source.to_string()};
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

int env_int(const char* name, int fallback) {
  const std::string v = process_environment(name);
  if (v.empty()) return fallback;
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

bool TcpOptions::in_environment() { return !job_environment_source().empty(); }

TcpOptions TcpOptions::from_environment() {
  const JobEnvironment job = read_job_environment();
  if (job.source.empty()) {
    throw ValueError(
        "not started as a rank of a job: set MTF_RANK and MTF_WORLD_SIZE (mtf-launch does), "
        "or run under srun or a torchrun-style launcher");
  }
  TcpOptions o;
  o.source = job.source;
  o.rank = job.rank;
  o.world_size = job.world_size;
  o.local_rank = job.local_rank;
  o.local_size = job.local_world_size;
  o.node_rank = job.node_rank;
  o.coordinator = job.coordinator;
  o.token = job.token;
  o.listen_host = process_environment("MTF_LISTEN_HOST");
  o.timeout = std::chrono::milliseconds(env_int("MTF_TIMEOUT_MS", 60000));
  o.connect_timeout = std::chrono::milliseconds(env_int("MTF_CONNECT_TIMEOUT_MS", 60000));
  o.shared_memory = env_int("MTF_SHM", 1) != 0;
  return o;
}

namespace {

void validate(const TcpOptions& o) {
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
  if (o.shm_ring_bytes < 4096 || o.shm_ring_bytes > (size_t{1} << 30)) {
    throw ValueError(str_cat("TCP transport: shm_ring_bytes ", o.shm_ring_bytes,
                             " is outside 4096..1073741824 (each direction of each pair of ranks "
                             "on one machine has a ring of this size)"));
  }
  if (o.world_size > 1 && o.coordinator.empty()) {
    throw ValueError("TCP transport: MTF_COORDINATOR (host:port of rank 0) is not set");
  }
}

// One rank's part of the rendezvous: rank 0 accepts every other rank and
// sends them the address table; every other rank joins through rank 0,
// connects to the ranks below it and accepts those above. Every connection
// is authenticated both ways before it counts.
class Rendezvous {
 public:
  Rendezvous(const TcpOptions& o, asio::io_context& io, std::vector<tcp::socket>& sockets)
      : o_(o),
        io_(io),
        sockets_(sockets),
        me_(o.rank),
        world_(o.world_size),
        deadline_(Clock::now() + o.connect_timeout),
        acceptor_(io) {}

  void run() {
    listen();
    if (me_ == 0) {
      serve_as_coordinator();
    } else {
      const std::vector<std::string> addresses = join_through_coordinator();
      connect_to_lower_ranks(addresses);
      accept_ranks(world_ - 1 - me_, [&](int r) {
        return r > me_ ? std::string()
                       : str_cat("rank ", r, " connected to rank ", me_,
                                 ", which connects to it: two processes claim one rank?");
      });
    }
    boost::system::error_code ec;
    acceptor_.close(ec);
  }

 private:
  // Our listener (see plan_listening), and the address the others reach it at.
  void listen() {
    const ListenPlan plan = plan_listening(io_, o_);
    boost::system::error_code ec;
    acceptor_.open(plan.bind.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(plan.bind, ec);
    if (!ec) acceptor_.listen(64, ec);
    if (!ec) acceptor_.non_blocking(true, ec);
    if (ec) {
      throw IoError(str_cat("rank ", me_, " cannot listen on ",
                            address_text(plan.bind.address(), plan.bind.port()), ": ", ec.message(),
                            me_ == 0 ? " (is the coordinator's port free, and its address this "
                                       "machine's?)"
                                     : ""));
    }
    my_address_ = me_ == 0 ? o_.coordinator
                           : address_text(asio::ip::make_address(plan.advertise),
                                          acceptor_.local_endpoint().port());
  }

  // Rank 0: every other rank, then the table of their addresses to each.
  void serve_as_coordinator() {
    std::vector<std::string> addresses(static_cast<size_t>(world_));
    accept_ranks(
        world_ - 1, [](int r) { return r >= 1 ? std::string() : std::string("rank 0?"); },
        &addresses);
    addresses[0] = my_address_;
    const std::string table = transport::encode_address_table(addresses);
    for (int r = 1; r < world_; ++r) {
      try {
        write_all(sockets_[r].native_handle(), table.data(), table.size(), deadline_);
      } catch (const Refused& e) {
        throw IoError(
            str_cat("rank 0 could not send the address table to rank ", r, ": ", e.what()));
      }
    }
  }

  // Another rank: connects to rank 0, proves the token, gives its address
  // and reads every rank's.
  std::vector<std::string> join_through_coordinator() {
    const tcp::endpoint coord = resolve(io_, o_.coordinator, "MTF_COORDINATOR");
    try {
      sockets_[0] = connect_with_retry(io_, coord, deadline_, "rank 0 (the coordinator)");
      const int fd = sockets_[0].native_handle();
      client_handshake(
          fd, me_, world_, 0, o_.token, my_address_,
          std::min(deadline_, Clock::now() + o_.handshake_timeout + o_.connect_timeout));
      bool first = true;
      return transport::decode_address_table(world_, [&](void* data, size_t bytes) {
        try {
          read_exact(fd, data, bytes, deadline_);
        } catch (const Refused& e) {
          if (!first) throw;
          throw Refused(str_cat("rank 0 sent no address table (", e.what(),
                                "): it waits for ranks that have not joined, or failed; its own "
                                "error says which"));
        }
        first = false;
      });
    } catch (const Refused& e) {
      throw IoError(str_cat("rank ", me_, " could not join through the coordinator ",
                            o_.coordinator, ": ", e.what()));
    } catch (const JobConflict& e) {
      throw ValueError(str_cat("rank ", me_, " could not join the job: ", e.what()));
    }
  }

  void connect_to_lower_ranks(const std::vector<std::string>& addresses) {
    for (int r = 1; r < me_; ++r) {
      const tcp::endpoint ep = resolve(io_, addresses[r], "a rank's address");
      sockets_[r] = connect_with_retry(io_, ep, deadline_, str_cat("rank ", r));
      try {
        client_handshake(sockets_[r].native_handle(), me_, world_, r, o_.token, "",
                         std::min(deadline_, Clock::now() + o_.handshake_timeout));
      } catch (const Refused& e) {
        throw IoError(str_cat("rank ", me_, " could not connect to rank ", r, " at ", addresses[r],
                              ": ", e.what()));
      } catch (const JobConflict& e) {
        throw ValueError(str_cat("rank ", me_, " could not join the job: ", e.what()));
      }
    }
  }

  // Accepts authenticated ranks until `want` are in; `allowed(r)` is empty
  // when rank r may connect here, else why not. Refusals of strangers are
  // logged and counted (the timeout names the last); a conflict with an
  // authenticated rank of this job fails the set-up at once. Rank 0 keeps
  // each rank's address in `addresses`.
  void accept_ranks(int want, const std::function<std::string(int)>& allowed,
                    std::vector<std::string>* addresses = nullptr) {
    for (int joined = 0; joined < want;) {
      if (!wait_fd(acceptor_.native_handle(), POLLIN, deadline_)) throw missing_ranks(allowed);
      tcp::socket s(io_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (ec) continue;
      s.non_blocking(true, ec);
      const std::string who = remote_address(s);
      try {
        const Admitted a = server_handshake(
            s.native_handle(), me_, world_, o_.token,
            std::min(deadline_, Clock::now() + o_.handshake_timeout), [&](int r) {
              if (!sockets_[r].is_open()) return allowed(r);
              return str_cat("two processes claim rank ", r, " (from ", remote_address(sockets_[r]),
                             " and from ", who,
                             "): does every node have its own --node_rank (MTF_RANK)?");
            });
        if (addresses) (*addresses)[a.rank] = a.address;
        sockets_[a.rank] = std::move(s);
        ++joined;
      } catch (const Refused& e) {
        log_refusal(me_, who, e.what());
        ++refusals_;
        last_refusal_ = str_cat("from ", who, ": ", e.what());
      } catch (const JobConflict& e) {
        throw ValueError(str_cat("rank ", me_, ": ", e.what()));
      }
    }
  }

  TimeoutError missing_ranks(const std::function<std::string(int)>& allowed) const {
    std::string missing;
    for (int r = 0; r < world_; ++r)
      if (r != me_ && !sockets_[r].is_open() && allowed(r).empty())
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    return TimeoutError(str_cat(
        "rank ", me_, ": ranks ", missing, " did not connect before the set-up deadline (",
        o_.connect_timeout.count(), " ms)",
        refusals_
            ? str_cat("; ", refusals_, " connection(s) refused meanwhile, the last ", last_refusal_)
            : std::string()));
  }

  static std::string remote_address(const tcp::socket& s) {
    try {
      return s.remote_endpoint().address().to_string();
    } catch (const std::exception&) {
      return "?";
    }
  }

  const TcpOptions& o_;
  asio::io_context& io_;
  std::vector<tcp::socket>& sockets_;  // by rank; ours stays closed
  const int me_, world_;
  const Clock::time_point deadline_;  // of the whole set-up
  tcp::acceptor acceptor_;
  std::string my_address_;
  int refusals_ = 0;          // connections of strangers refused so far
  std::string last_refusal_;  // who, and why
};

}  // namespace

std::unique_ptr<Transport> connect_tcp(const TcpOptions& o) {
  validate(o);
  auto io = std::make_unique<asio::io_context>();
  std::vector<tcp::socket> sockets;
  for (int i = 0; i < o.world_size; ++i) sockets.emplace_back(*io);
  if (o.world_size > 1) Rendezvous(o, *io, sockets).run();
  return transport::make_tcp_transport(o, std::move(sockets), std::move(io));
}

}  // namespace mtf
