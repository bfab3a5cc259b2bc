// mtf/process_transport.h — joining the multi-process job this process was
// started in, whoever started it. The examples' --transport flag and the
// Python module's Session(transport=...) both choose through here, so a job
// forms the same way from C++ and from Python.
#pragma once

#include <memory>
#include <string>

#include "mtf/transport.h"

namespace mtf {

// ValueError naming the accepted values unless `which` is auto, tcp, mpi or
// none: the one check of a transport's name, from flags and from Python.
void check_process_transport_name(const std::string& which);

// What `which` joins, without connecting: "tcp", "mpi" or "none". For
// "auto": TCP under mtf-launch (MTF_* variables); MPI under an MPI launcher
// (mpirun, srun --mpi=pmix) when this build has MPI; TCP under srun without
// MPI or a torchrun-style launcher (mtf/job_environment.h); else none.
// ValueError for another `which`, naming the accepted values.
std::string process_transport_kind(const std::string& which);

// Joins the job process_transport_kind(which) names. Returns the connected transport, or
// nullptr for none; *name (when given) becomes "TCP", "MPI" or "". Blocks
// until every rank has joined. ValueError for another `which`, naming the
// accepted values; the connect functions' errors otherwise.
std::shared_ptr<Transport> connect_process_transport(const std::string& which,
                                                     std::string* name = nullptr);

}  // namespace mtf
