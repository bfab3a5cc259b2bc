// tags.h — the one registry of collective tags. Every collective call of a
// job gets its tag from a tag space, numbered by its caller (tag_in), so
// messages of different callers (a program's steps, the session's gathers,
// a checkpoint's checks) can never be taken for one another. Within a call,
// every message goes on a named channel (subtag); a call over several mesh
// axes one after another gives each axis its own tag (axis_tag). Nobody
// numbers channels by hand.
//
// Bits, low to high: a channel (4 bits), possibly a second channel for a
// collective that calls another (a hierarchical allreduce's phase, then the
// algorithm's channel: 4 more), an axis (5 bits), the caller's index (40
// bits), the space (11 bits). The axis index counts only the axes of more
// than one processor, of which a mesh of fewer than 2^31 processors has at
// most 30, so every mesh, of any number of axes, fits.
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
constexpr int kChannelBits = 4;
constexpr int kAxisBits = 5;

inline uint64_t tag_in(TagSpace space, uint64_t index) {
  MTF_CHECK(index < (uint64_t{1} << kTagIndexBits));
  return (static_cast<uint64_t>(space) << kTagIndexBits) | index;
}

// The channels of one collective call. Collectives of one message stream
// use kOnly; the rest name each stream of their algorithm.
enum class Channel : uint64_t {
  kOnly = 0,
  // Bidirectional ring allreduce: each phase's two directions.
  kRingScatterForward = 0,
  kRingScatterBackward = 1,
  kRingGatherForward = 2,
  kRingGatherBackward = 3,
  // Dissemination barrier: round r is kBarrierRounds + r (barrier_round).
  kBarrierRounds = 0,
  kRecursiveDoubling = 5,
  kHalvingDoubling = 6,
  // Hierarchical allreduce's phases (each a collective with its own channels).
  kWithinMachineScatter = 8,
  kBetweenMachines = 9,
  kWithinMachineGather = 10,
  kWithinMachineAllreduce = 11,
  kBetweenLeaders = 12,
  kWithinMachineBroadcast = 13,
};

inline uint64_t subtag(uint64_t tag, Channel channel) {
  MTF_CHECK(static_cast<uint64_t>(channel) < (uint64_t{1} << kChannelBits));
  return (tag << kChannelBits) | static_cast<uint64_t>(channel);
}

// Round `round` of a dissemination barrier (ceil(log2 n) rounds: fewer than
// 16 for any group of fewer than 2^15 ranks).
inline Channel barrier_round(int round) {
  MTF_CHECK(round >= 0 && round < (1 << kChannelBits));
  return static_cast<Channel>(static_cast<uint64_t>(Channel::kBarrierRounds) +
                              static_cast<uint64_t>(round));
}

// The tag of the `axis_index`-th axis (counting only axes of more than one
// processor) of a call that goes axis by axis.
inline uint64_t axis_tag(uint64_t tag, int axis_index) {
  MTF_CHECK(axis_index >= 0 && axis_index < (1 << kAxisBits));
  return (tag << kAxisBits) | static_cast<uint64_t>(axis_index);
}

}  // namespace mtf::collectives
