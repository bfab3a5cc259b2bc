// mtf/mpi_transport.h — one process per rank over MPI, for clusters whose
// jobs already start with mpirun/srun. The same collectives algorithms run on
// MPI point-to-point messages (MPI_Isend/MPI_Recv on a duplicate of
// MPI_COMM_WORLD), so results are bit-identical to the TCP and in-process
// runs. Every message carries the same header as over TCP, so diverging
// collectives are named; every blocking call has a deadline. A rank that
// dies is handled by the MPI runtime (mpirun stops the job).
//
// Built when CMake finds MPI and MTF_WITH_MPI is on (default); otherwise
// connect_mpi() throws ValueError saying so.
#pragma once

#include <chrono>
#include <memory>

#include "mtf/transport.h"

namespace mtf {

// True when this build has MPI support.
bool mpi_available();
// True when the process was started by an MPI launcher (OpenMPI, MPICH,
// Slurm PMI variables).
bool in_mpi_environment();
// Initialises MPI (once per process) and returns this rank's transport.
// MPI is finalised when the transport is destroyed.
std::unique_ptr<Transport> connect_mpi(std::chrono::milliseconds timeout = std::chrono::minutes(1));

}  // namespace mtf
