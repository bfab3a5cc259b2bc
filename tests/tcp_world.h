// tcp_world.h — n ranks of a TCP job as threads of this test process, over
// loopback: each connects (rendezvous at a free port) and runs the body.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "mtf/tcp_transport.h"
#include "test_util.h"

namespace mtf::testing {

// shared_memory false: every pair over loopback sockets, although the ranks
// share this machine (true: over shared-memory links, as jobs run).
inline TcpOptions tcp_options(int rank, int n, int port,
                              std::chrono::milliseconds timeout = std::chrono::seconds(20),
                              bool shared_memory = false) {
  TcpOptions o;
  o.shared_memory = shared_memory;
  o.rank = rank;
  o.world_size = n;
  o.coordinator = "127.0.0.1:" + std::to_string(port);
  o.token = "a-test-token-of-this-job";
  o.timeout = timeout;
  o.connect_timeout = std::chrono::seconds(20);
  return o;
}

// Runs body(transport) on n ranks (threads); returns each rank's error text
// ("" when it succeeded).
inline std::vector<std::string> run_tcp(
    int n, const std::function<void(Transport&)>& body,
    std::chrono::milliseconds timeout = std::chrono::seconds(20), int port = 0,
    bool shared_memory = false) {
  if (port == 0) port = free_port();
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto t = connect_tcp(tcp_options(r, n, port, timeout, shared_memory));
        body(*t);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace mtf::testing
