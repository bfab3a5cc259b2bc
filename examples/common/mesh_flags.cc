#include "common/mesh_flags.h"

#include "mtf/errors.h"
#include "mtf/mpi_transport.h"
#include "mtf/tcp_transport.h"

namespace mtf::data {

void define_mesh_flags(Flags& flags) {
  flags.define("mesh_shape", "", "mesh of processors, e.g. \"rows:2;cols:2\" (empty: one)");
  flags.define("layout", "", "layout rules, e.g. \"batch:rows;hidden:cols\"");
  flags.define("mesh_impl", "simd", "simd (a program per core) or placement (one controller)");
  flags.define("execution", "fibers", "simd cores as fibers on one thread, or as threads");
  flags.define("transport", "auto",
               "multi-process transport: auto (tcp under mtf-launch, mpi under mpirun), tcp, "
               "mpi, or none");
}

MeshConfig mesh_config_from_flags(const Flags& flags, std::string* transport_name) {
  MeshConfig mesh;
  const std::string impl = flags.str("mesh_impl");
  if (impl != "simd" && impl != "placement")
    throw ValueError("--mesh_impl must be simd or placement, not \"" + impl + "\"");
  mesh.impl = impl == "simd" ? MeshImpl::kSimd : MeshImpl::kPlacement;
  const std::string execution = flags.str("execution");
  if (execution != "fibers" && execution != "threads")
    throw ValueError("--execution must be fibers or threads, not \"" + execution + "\"");
  mesh.execution = execution == "fibers" ? RankExecution::kFibers : RankExecution::kThreads;
  mesh.mesh_shape = MeshShape(flags.str("mesh_shape"));
  mesh.layout = LayoutRules(flags.str("layout"));
  // Started by mtf-launch (or any launcher setting MTF_RANK etc.) or by
  // mpirun: this process is one rank of a multi-process job.
  const std::string transport = flags.str("transport");
  if (transport == "tcp" || (transport == "auto" && TcpOptions::in_environment())) {
    mesh.process_transport = connect_tcp(TcpOptions::from_environment());
    *transport_name = "TCP";
  } else if (transport == "mpi" || (transport == "auto" && in_mpi_environment())) {
    mesh.process_transport = connect_mpi();
    *transport_name = "MPI";
  } else if (transport != "auto" && transport != "none") {
    throw ValueError("--transport must be auto, tcp, mpi or none, not \"" + transport + "\"");
  }
  return mesh;
}

std::string describe_mesh(const MeshConfig& config, const std::string& transport_name) {
  std::string where;
  if (config.process_transport) {
    where = "rank " + std::to_string(config.process_transport->rank()) + " of " +
            std::to_string(config.process_transport->size()) + " processes over " + transport_name;
  } else {
    where = config.impl == MeshImpl::kSimd ? "simd" : "placement";
  }
  return "mesh: " +
         (config.mesh_shape.size() > 1 ? config.mesh_shape.to_string() : "one processor") + " (" +
         std::to_string(config.mesh_shape.size()) + " processors), layout: \"" +
         config.layout.to_string() + "\", " + where;
}

}  // namespace mtf::data
