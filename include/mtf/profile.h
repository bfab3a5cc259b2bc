// mtf/profile.h — where a Session's time goes, per op type and per op, for
// each program it ran (MeshConfig::profile, Session::profile()).
//
// Every step of a program is timed on the wall clock: compute steps (an op's
// kernel on one processor's slices) and collectives (allreduce, allgather,
// split), as processor 0 of the mesh runs them (in a multi-process job, this
// rank; under the placement implementation, the controller running the step
// for every device). Figures are means per run of the program. A SIMD mesh
// of this process's threads or fibers times every processor, and reports
// each one's compute and collective time beside the tables (a processor on
// a slower CPU shows more compute; the others wait for it in their
// collectives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtf {

struct ProfileRow {
  std::string name;    // by_op: the op's name; by_type: the op type
  std::string type;    // the op type, or the collective ("allreduce", ...)
  double calls = 0;    // steps per run
  double seconds = 0;  // per run
  double flops = 0;    // per run, on the timed processor
  double bytes = 0;    // per run: bytes the kernel reads and writes; for
                       // collectives, bytes the processor sends
};

// One processor's time per run, split between compute steps (and splits)
// and collective steps (time in them includes waiting for other processors).
struct ProcessorTime {
  int64_t processor = 0;
  double compute_seconds = 0;
  double collective_seconds = 0;
};

struct ProgramProfile {
  std::string label;  // what the program computes (fetches, targets)
  int64_t runs = 0;
  double run_seconds = 0;           // mean wall time of Session::run
  double step_seconds = 0;          // mean sum of the timed steps
  std::vector<ProfileRow> by_type;  // most time first
  std::vector<ProfileRow> by_op;    // most time first
  // Every processor of an in-process SIMD mesh of more than one (empty
  // otherwise), by processor number.
  std::vector<ProcessorTime> by_processor;
  // A table like PyTorch's profiler: per op type, then the `max_ops` ops
  // taking most time, with time per run, share of the run, GFLOP/s for ops
  // contractions (einsum) and GB/s for the rest.
  std::string to_string(int max_ops = 15) const;
};

struct Profile {
  std::vector<ProgramProfile> programs;  // most total time first
  std::string to_string(int max_ops = 15) const;
};

}  // namespace mtf
