// tcp_connection.h — the TCP transport proper (tcp_transport.cc), built by
// connect_tcp (tcp_rendezvous.cc) from one connected socket per peer.
// Internal.
#pragma once

#include <boost/asio.hpp>
#include <memory>
#include <vector>

#include "mtf/tcp_transport.h"

namespace mtf::transport {

// sockets[p] is the authenticated connection to rank p (unused for our own
// rank); io owns them.
std::unique_ptr<Transport> make_tcp_transport(const TcpOptions& options,
                                              std::vector<boost::asio::ip::tcp::socket> sockets,
                                              std::unique_ptr<boost::asio::io_context> io);

}  // namespace mtf::transport
