// example_main.h — how the examples end: an mtf::Error or any other exception
// from `body` is printed as "<name>: error: ..." after flushing what the run
// printed so far, and the process exits 1 — or kExitPeerFailed when the
// error is a peer's (PeerLostError: a rank lost, or failed in a step all
// took part in), so that mtf-launch names the rank that failed first;
// otherwise body's status.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>

#include "cli/exit_status.h"
#include "mtf/errors.h"

namespace mtf::cli {

inline int run_example(const char* name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const mtf::PeerLostError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return kExitPeerFailed;
  } catch (const mtf::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: unexpected error: %s\n", name, e.what());
  }
  return 1;
}

}  // namespace mtf::cli
