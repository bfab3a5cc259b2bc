#include "mtf/process_transport.h"

#include "mtf/errors.h"
#include "mtf/job_environment.h"
#include "mtf/mpi_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf {

void check_process_transport_name(const std::string& which) {
  if (which != "auto" && which != "tcp" && which != "mpi" && which != "none")
    throw ValueError("transport must be auto, tcp, mpi or none, not \"" + which + "\"");
}

std::string process_transport_kind(const std::string& which) {
  check_process_transport_name(which);
  if (which != "auto") return which;
  // mtf-launch's (or hand-set) MTF_* variables name TCP outright. Under an
  // MPI launcher (mpirun, srun --mpi=pmix) MPI, when this build has it;
  // Slurm's and torchrun's own variables otherwise mean TCP.
  const std::string source = job_environment_source();
  if (source == "MTF_*") return "tcp";
  if (in_mpi_environment() && (mpi_available() || source.empty())) return "mpi";
  return source.empty() ? "none" : "tcp";
}

std::shared_ptr<Transport> connect_process_transport(const std::string& which, std::string* name) {
  if (name) name->clear();
  const std::string kind = process_transport_kind(which);
  if (kind == "tcp") {
    if (name) *name = "TCP";
    return connect_tcp(TcpOptions::from_environment());
  }
  if (kind == "mpi") {
    if (name) *name = "MPI";
    return connect_mpi();
  }
  return nullptr;
}

}  // namespace mtf
