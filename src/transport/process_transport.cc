#include "mtf/process_transport.h"

#include "mtf/errors.h"
#include "mtf/mpi_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf {

std::shared_ptr<Transport> connect_process_transport(const std::string& which, std::string* name) {
  if (name) name->clear();
  if (which == "tcp" || (which == "auto" && TcpOptions::in_environment())) {
    if (name) *name = "TCP";
    return connect_tcp(TcpOptions::from_environment());
  }
  if (which == "mpi" || (which == "auto" && in_mpi_environment())) {
    if (name) *name = "MPI";
    return connect_mpi();
  }
  if (which != "auto" && which != "none") {
    throw ValueError("transport must be auto, tcp, mpi or none, not \"" + which + "\"");
  }
  return nullptr;
}

}  // namespace mtf
