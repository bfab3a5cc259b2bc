// mtf/process_transport.h — joining the multi-process job this process was
// started in, whoever started it. The examples' --transport flag and the
// Python module's Session(transport=...) both choose through here, so a job
// forms the same way from C++ and from Python.
#pragma once

#include <memory>
#include <string>

#include "mtf/transport.h"

namespace mtf {

// `which`: "auto" (TCP when MTF_RANK and MTF_WORLD_SIZE are set, as
// mtf-launch or Slurm scripts set them; MPI under an MPI launcher; else
// none), "tcp", "mpi" or "none". Returns the connected transport, or
// nullptr for none; *name (when given) becomes "TCP", "MPI" or "". Blocks
// until every rank has joined. ValueError for another `which`, naming the
// accepted values; the connect functions' errors otherwise.
std::shared_ptr<Transport> connect_process_transport(const std::string& which,
                                                     std::string* name = nullptr);

}  // namespace mtf
