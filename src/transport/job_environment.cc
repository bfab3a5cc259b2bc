#include "mtf/job_environment.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

using detail::str_cat;

// A non-negative integer variable; `fallback` when unset.
int int_variable(const EnvironmentLookup& env, const std::string& name, int fallback,
                 const char* source) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 30)) {
    throw ValueError(str_cat("environment variable ", name, "=\"", v, "\" (", source,
                             ") is not a non-negative number"));
  }
  return static_cast<int>(x);
}

int required_int(const EnvironmentLookup& env, const std::string& name, const char* source) {
  if (env(name).empty()) {
    throw ValueError(str_cat("environment variable ", name, " is not set (", source,
                             " variables describe the job but this one is missing)"));
  }
  return int_variable(env, name, 0, source);
}

std::string first_set(const EnvironmentLookup& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    std::string v = env(n);
    if (!v.empty()) return v;
  }
  return "";
}

std::string token_from(const EnvironmentLookup& env) {
  std::string token = env("MTF_JOB_TOKEN");
  const std::string file = env("MTF_JOB_TOKEN_FILE");
  if (!token.empty() || file.empty()) return token;
  std::ifstream in(file);
  if (!in) {
    throw ValueError(str_cat("MTF_JOB_TOKEN_FILE=\"", file,
                             "\" cannot be read; the file must hold the job token (make one "
                             "with `mtf-launch --new_token > FILE`)"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  token = ss.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  size_t start = 0;
  while (start < token.size() && std::isspace(static_cast<unsigned char>(token[start]))) ++start;
  token.erase(0, start);
  if (token.empty()) throw ValueError(str_cat("MTF_JOB_TOKEN_FILE=\"", file, "\" is empty"));
  return token;
}

// Rank, world, local rank and local world must agree with each other.
void check_consistent(const JobEnvironment& j) {
  if (j.world_size < 1) throw ValueError(str_cat(j.source, ": a world size of ", j.world_size));
  if (j.rank >= j.world_size) {
    throw ValueError(str_cat(j.source, ": rank ", j.rank, " is outside 0..", j.world_size - 1));
  }
  if (j.local_world_size < 1 || j.local_world_size > j.world_size) {
    throw ValueError(str_cat(j.source, ": ", j.local_world_size, " processes on this machine in a ",
                             "job of ", j.world_size));
  }
  if (j.local_rank >= j.local_world_size) {
    throw ValueError(str_cat(j.source, ": local rank ", j.local_rank, " is outside 0..",
                             j.local_world_size - 1));
  }
}

}  // namespace

std::string process_environment(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "";
}

std::string job_environment_source(const EnvironmentLookup& env) {
  if (!env("MTF_RANK").empty() && !env("MTF_WORLD_SIZE").empty()) return "MTF_*";
  if (!env("RANK").empty() && !env("WORLD_SIZE").empty() && !env("MASTER_ADDR").empty())
    return "torchrun";
  if (!env("SLURM_PROCID").empty() && !first_set(env, {"SLURM_STEP_ID", "SLURM_STEPID"}).empty() &&
      !first_set(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}).empty())
    return "Slurm";
  return "";
}

JobEnvironment read_job_environment(const EnvironmentLookup& env) {
  JobEnvironment j;
  j.source = job_environment_source(env);
  if (j.source.empty()) return j;
  const char* src = j.source.c_str();
  if (j.source == "MTF_*" || j.source == "torchrun") {
    // The same five numbers under two sets of names.
    const bool mtf = j.source == "MTF_*";
    j.rank = required_int(env, mtf ? "MTF_RANK" : "RANK", src);
    j.world_size = required_int(env, mtf ? "MTF_WORLD_SIZE" : "WORLD_SIZE", src);
    const char* local_world = mtf ? "MTF_LOCAL_WORLD_SIZE" : "LOCAL_WORLD_SIZE";
    j.local_world_size = int_variable(env, local_world, 1, src);
    if (j.local_world_size < 1) throw ValueError(str_cat(local_world, " must be at least 1"));
    j.local_rank =
        int_variable(env, mtf ? "MTF_LOCAL_RANK" : "LOCAL_RANK", j.rank % j.local_world_size, src);
    j.node_rank =
        int_variable(env, mtf ? "MTF_NODE_RANK" : "GROUP_RANK", j.rank / j.local_world_size, src);
    j.coordinator = env("MTF_COORDINATOR");
    if (!mtf) {  // torchrun: rank 0 at MASTER_ADDR:MASTER_PORT
      const int port = required_int(env, "MASTER_PORT", src);
      if (port < 1 || port > 65535)
        throw ValueError(str_cat("MASTER_PORT=", port, " is not a port"));
      if (j.coordinator.empty()) {
        const std::string host = env("MASTER_ADDR");
        j.coordinator =
            str_cat(host.find(':') != std::string::npos ? "[" + host + "]" : host, ":", port);
      }
    }
  } else {
    j.rank = required_int(env, "SLURM_PROCID", src);
    j.world_size = env("SLURM_STEP_NUM_TASKS").empty()
                       ? required_int(env, "SLURM_NTASKS", src)
                       : required_int(env, "SLURM_STEP_NUM_TASKS", src);
    j.local_rank = int_variable(env, "SLURM_LOCALID", 0, src);
    j.node_rank = int_variable(env, "SLURM_NODEID", 0, src);
    const std::string per_node =
        first_set(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
    j.local_world_size = per_node.empty() ? 1 : slurm_tasks_on_node(per_node, j.node_rank);
    j.coordinator = env("MTF_COORDINATOR");
    if (j.coordinator.empty() && !env("MASTER_ADDR").empty() && !env("MASTER_PORT").empty())
      j.coordinator = env("MASTER_ADDR") + ":" + env("MASTER_PORT");
    if (j.coordinator.empty()) {
      const std::string nodes =
          first_set(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
      if (nodes.empty()) {
        throw ValueError(
            "Slurm: none of MTF_COORDINATOR, SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or "
            "SLURM_NODELIST is set, so rank 0's address is unknown");
      }
      int port = int_variable(env, "MTF_COORDINATOR_PORT", 0, src);
      if (port == 0) {
        const int job = int_variable(env, "SLURM_JOB_ID", 0, src);
        const int step = int_variable(
            env, first_set(env, {"SLURM_STEP_ID"}).empty() ? "SLURM_STEPID" : "SLURM_STEP_ID", 0,
            src);
        port = 20000 + (job % 1000) * 10 + step % 10;
      }
      if (port > 65535) throw ValueError(str_cat("MTF_COORDINATOR_PORT=", port, " is not a port"));
      j.coordinator = str_cat(first_slurm_host(nodes), ":", port);
    }
  }
  j.token = token_from(env);
  check_consistent(j);
  return j;
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at the first comma outside brackets; a bracketed
  // range stands for its first value ("a[07-09,12]b" is a07b).
  std::string host;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    if (nodelist[i] == '[') {
      const size_t close = nodelist.find(']', i);
      if (close == std::string::npos)
        throw ValueError(str_cat("Slurm node list \"", nodelist, "\" has an unclosed '['"));
      const std::string inside = nodelist.substr(i + 1, close - i - 1);
      const size_t end = inside.find_first_of("-,");
      const std::string first = inside.substr(0, end);
      if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos)
        throw ValueError(str_cat("Slurm node list \"", nodelist, "\": \"[", inside,
                                 "]\" is not a range of numbers"));
      host += first;
      i = close + 1;
    } else {
      host += nodelist[i++];
    }
  }
  if (host.empty()) throw ValueError(str_cat("Slurm node list \"", nodelist, "\" names no host"));
  return host;
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  // Entries "N" or "N(xR)", comma-separated.
  int seen = 0;
  std::stringstream in(tasks_per_node);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    char* end = nullptr;
    const long tasks = std::strtol(entry.c_str(), &end, 10);
    long repeat = 1;
    if (end == entry.c_str() || tasks < 1)
      repeat = -1;
    else if (*end == '(') {
      if (end[1] != 'x')
        repeat = -1;
      else {
        char* close = nullptr;
        repeat = std::strtol(end + 2, &close, 10);
        if (close == end + 2 || std::string(close) != ")" || repeat < 1) repeat = -1;
      }
    } else if (*end != '\0') {
      repeat = -1;
    }
    if (repeat < 1) {
      throw ValueError(str_cat("Slurm tasks per node \"", tasks_per_node, "\": entry \"", entry,
                               "\" is not N or N(xR)"));
    }
    if (node < seen + repeat) return static_cast<int>(tasks);
    seen += static_cast<int>(repeat);
  }
  throw ValueError(str_cat("Slurm tasks per node \"", tasks_per_node, "\" lists ", seen,
                           " nodes; this is node ", node));
}

}  // namespace mtf
