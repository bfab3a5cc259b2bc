// tags.h — the one registry of collective tag spaces. Every collective call
// of a job gets its tag from one of these spaces, numbered by its caller, so
// messages of different callers (a program's steps, the session's gathers,
// a checkpoint's checks) can never be taken for one another. Collectives
// derive their messages' tags from the call's tag by shifting it left (at
// most 11 bits: allreduce_over_axes, a hierarchical allreduce's step, then
// the step's own subtag), so a space holds indices below 2^40 and spaces
// stay below 2^13.
#pragma once

#include <cstdint>

#include "core/check.h"

namespace mtf::collectives {

enum class TagSpace : uint64_t {
  kProgramStep = 0,       // run_core: the index of the step in its program
  kSessionGather = 1,     // Session: slices of fetches and variables to every rank
  kCheckpointSave = 3,    // a multi-process save: agreeing on checksums, turns
  kCheckpointCommit = 4,  // the barrier after a save is committed
};

constexpr int kTagIndexBits = 40;

inline uint64_t tag_in(TagSpace space, uint64_t index) {
  MTF_CHECK(index < (uint64_t{1} << kTagIndexBits));
  return (static_cast<uint64_t>(space) << kTagIndexBits) | index;
}

}  // namespace mtf::collectives
