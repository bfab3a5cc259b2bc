// agreement.h — whether a step that every rank of a job took part in (a
// multi-process checkpoint save) succeeded everywhere, and the one place
// that finishes it. Each rank's outcome goes to rank 0; when all succeeded,
// rank 0 runs `finish` (sealing and renaming a file), whose failure counts
// as rank 0's; rank 0's verdict then goes to every rank, so all ranks
// return the same answer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mtf/transport.h"

namespace mtf::checkpoint {

// The two messages of an agreement, on tags of the caller's space.
struct AgreementTags {
  uint64_t status;   // a rank's outcome to rank 0
  uint64_t verdict;  // rank 0's verdict to every rank
};

// Returns -1 when every rank (and `finish`) succeeded, else the lowest
// failed rank. `ok` is this rank's outcome; `error` keeps this rank's own
// failure, and on rank 0 becomes finish's error when finish throws an
// mtf::Error. A single process (`job` null) runs `finish` when ok.
// REQUIRES: every rank of `job` calls agree with the same tags.
int agree(Transport* job, bool ok, std::string& error, const AgreementTags& tags,
          const std::function<void()>& finish);

}  // namespace mtf::checkpoint
