// exit_status.h — the exit status of a rank that failed because another rank
// did (a PeerLostError). The examples exit with it (example_main.h), and
// mtf-launch, which links nothing of mtf, tells such ranks apart by it to
// name the rank that failed first.
#pragma once

namespace mtf::cli {

constexpr int kExitPeerFailed = 3;

}  // namespace mtf::cli
