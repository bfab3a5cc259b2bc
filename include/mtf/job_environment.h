// mtf/job_environment.h — who this process is in a multi-process job, read
// from the variables whoever started it set. Three sources, in this order:
//
//   mtf-launch, or by hand: MTF_RANK, MTF_WORLD_SIZE, MTF_COORDINATOR
//       (host:port of rank 0), MTF_LOCAL_RANK, MTF_LOCAL_WORLD_SIZE,
//       MTF_NODE_RANK;
//   torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK,
//       LOCAL_WORLD_SIZE, GROUP_RANK (the node);
//   a Slurm job step (srun): SLURM_PROCID, SLURM_STEP_NUM_TASKS (or
//       SLURM_NTASKS), SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_TASKS_PER_NODE
//       and the step's node list; only inside a step (SLURM_STEP_ID set), so
//       a program run directly by a batch script is not mistaken for rank 0
//       of a job. The coordinator is MTF_COORDINATOR, else MASTER_ADDR and
//       MASTER_PORT, else the first node of the step on MTF_COORDINATOR_PORT
//       (default: a port in 20000-29999 derived from the job and step ids).
//
// The job token (the shared secret every connection proves it knows) comes
// from MTF_JOB_TOKEN, or from the file named by MTF_JOB_TOKEN_FILE, whatever
// the source. Malformed values are a ValueError naming the variable, its
// value and what it should be.
#pragma once

#include <functional>
#include <string>

namespace mtf {

struct JobEnvironment {
  // "MTF_*", "torchrun" or "Slurm": which variables described the job; empty
  // when this process was started alone.
  std::string source;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // among the job's processes on this machine
  int local_world_size = 1;  // the job's processes on this machine
  int node_rank = 0;         // which machine of the job
  std::string coordinator;   // "host:port" where rank 0 listens
  std::string token;         // the job's shared secret ("" when none given)
};

// Looks a variable up: its value, or "" when it is not set.
using EnvironmentLookup = std::function<std::string(const std::string& name)>;
// This process's environment.
std::string process_environment(const std::string& name);

// Which source describes a job in `env` ("" when none), without validating
// the values: cheap, never throws.
std::string job_environment_source(const EnvironmentLookup& env = process_environment);
// The job `env` describes (a world of one when no source does).
JobEnvironment read_job_environment(const EnvironmentLookup& env = process_environment);

// The first host of a Slurm host list ("node[07-09,12],gpu1" is node07).
// ValueError for an empty or malformed list.
std::string first_slurm_host(const std::string& nodelist);
// Tasks on node `node` (0-based) of a Slurm tasks-per-node list such as
// "2(x3),1". ValueError when malformed or when the list has fewer nodes.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

}  // namespace mtf
