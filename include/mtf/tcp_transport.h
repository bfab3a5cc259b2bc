// mtf/tcp_transport.h — one process per rank over TCP (Boost.Asio).
//
// Ranks meet through a coordinator: rank 0 listens on the coordinator's
// address (host:port); every other rank listens on its own port, introduces
// itself to rank 0, gets everyone's address back and connects to the ranks
// below it, so every pair of ranks shares one connection. Any launcher can
// start the ranks: mtf-launch (on one machine or several), Slurm's srun, a
// torchrun-style launcher or a shell loop; mtf/job_environment.h says which
// variables each sets. Besides those, optionally:
//   MTF_LISTEN_HOST: where a rank listens (a name or address; default: the
//     interface that reaches the coordinator, whose address the rank gives
//     its peers; a wildcard such as 0.0.0.0 listens everywhere and still
//     gives that address);
//   MTF_TIMEOUT_MS: the deadline of every blocking call (default 60000);
//   MTF_CONNECT_TIMEOUT_MS: the deadline of the whole set-up (default 60000);
//   MTF_SHM: 0 keeps ranks on one machine on TCP (default 1: shared memory).
//
// Ranks on one machine (the same host identity: host, boot, namespaces,
// user) move their messages through shared-memory rings instead of
// loopback sockets, under the same framing, deadlines and error reports;
// the segments are anonymous (memfd), so no job leaves any behind, and the
// connection between two such ranks stays open to tell when one dies.
//
// Security: every connection proves knowledge of the job token by HMAC-SHA-256
// challenge-response in both directions (the token never crosses the wire);
// wrong tokens, garbage and stalled handshakes are refused and logged to
// stderr without disturbing the job (the set-up's timeout names the last
// refusal). A peer that proves the token but disagrees about the job (two
// processes claiming one rank, another world size) fails the set-up on both
// sides at once, with a ValueError saying which.
// Frames carry a bounded length, checked before anything is allocated.
//
// Failures never hang: a peer that exits without saying goodbye (crash,
// kill -9) is a PeerLostError naming it and the collective in progress, in
// whatever blocking call notices first; a silent peer is a TimeoutError at
// the deadline; a rank that calls another collective than its peers (kind,
// op, size or order) is an error naming both ranks and both calls.
//
// Data path: each blocking call drives all connections itself (poll on the
// sockets): an expected message is read straight into the caller's buffer,
// others are queued; while a send waits for buffer space, incoming data is
// drained, so two ranks sending to each other never deadlock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "mtf/transport.h"

namespace mtf {

struct TcpOptions {
  std::string source;  // which variables described the job (JobEnvironment::source)
  int rank = -1;
  int world_size = 0;
  int local_rank = 0;                        // among the job's ranks on this machine
  int local_size = 1;                        // ranks of the job on this machine
  int node_rank = 0;                         // which machine of the job
  std::string coordinator;                   // "host:port" where rank 0 listens
  std::string token;                         // the job's shared secret
  std::string listen_host;                   // empty: the interface that reaches the coordinator
  std::chrono::milliseconds timeout{60000};  // each blocking call
  std::chrono::milliseconds connect_timeout{60000};  // the whole set-up
  std::chrono::milliseconds handshake_timeout{5000};
  uint64_t max_frame_bytes = uint64_t{1} << 32;  // larger frames are a protocol error
  bool shared_memory = true;                     // between ranks of one machine (MTF_SHM)
  size_t shm_ring_bytes = 1u << 20;              // each direction of each pair

  // From the environment (read_job_environment, plus the variables above);
  // ValueError naming the variable that is missing or malformed.
  static TcpOptions from_environment();
  // True when some launcher's variables describe a job (never throws).
  static bool in_environment();
};

// Connects this rank to all others (blocking until every rank is in, or
// TimeoutError / IoError naming who is missing).
std::unique_ptr<Transport> connect_tcp(const TcpOptions& options);

}  // namespace mtf
