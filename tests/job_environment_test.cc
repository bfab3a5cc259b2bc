// Reading a job from mtf-launch's, torchrun's and Slurm's variables: ranks,
// local ranks, the coordinator, the token; Slurm's host and task lists; the
// transport "auto" picks; clear errors for malformed values.
#include "mtf/job_environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <map>
#include <string>

#include "mtf/errors.h"
#include "mtf/process_transport.h"

namespace mtf {
namespace {

using Env = std::map<std::string, std::string>;

EnvironmentLookup lookup(const Env& env) {
  return [env](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
}

std::string error_of(const Env& env) {
  try {
    read_job_environment(lookup(env));
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

// What a source described: the five numbers and the coordinator.
void expect_job(const JobEnvironment& j, const std::string& source, int rank, int world,
                int local_rank, int local_world, int node, const std::string& coordinator) {
  EXPECT_EQ(j.source, source);
  EXPECT_EQ(j.rank, rank);
  EXPECT_EQ(j.world_size, world);
  EXPECT_EQ(j.local_rank, local_rank);
  EXPECT_EQ(j.local_world_size, local_world);
  EXPECT_EQ(j.node_rank, node);
  EXPECT_EQ(j.coordinator, coordinator);
}

TEST(JobEnvironment, AloneIsAWorldOfOne) {
  const JobEnvironment j = read_job_environment(lookup({{"HOME", "/root"}}));
  EXPECT_EQ(j.source, "");
  EXPECT_EQ(j.world_size, 1);
  EXPECT_EQ(j.rank, 0);
}

TEST(JobEnvironment, MtfLaunchVariables) {
  const JobEnvironment j = read_job_environment(lookup({{"MTF_RANK", "5"},
                                                        {"MTF_WORLD_SIZE", "8"},
                                                        {"MTF_LOCAL_WORLD_SIZE", "4"},
                                                        {"MTF_COORDINATOR", "node0:29500"},
                                                        {"MTF_JOB_TOKEN", "0123456789abcdef"}}));
  // Local rank and node by default: rank mod and div the ranks per machine.
  expect_job(j, "MTF_*", 5, 8, 1, 4, 1, "node0:29500");
  EXPECT_EQ(j.token, "0123456789abcdef");
}

TEST(JobEnvironment, TorchrunVariables) {
  Env env = {{"RANK", "3"},           {"WORLD_SIZE", "4"},
             {"LOCAL_RANK", "1"},     {"LOCAL_WORLD_SIZE", "2"},
             {"GROUP_RANK", "1"},     {"MASTER_ADDR", "trainer-0"},
             {"MASTER_PORT", "29400"}};
  JobEnvironment j = read_job_environment(lookup(env));
  expect_job(j, "torchrun", 3, 4, 1, 2, 1, "trainer-0:29400");
  env["MASTER_ADDR"] = "fd00::1";
  EXPECT_EQ(read_job_environment(lookup(env)).coordinator, "[fd00::1]:29400");
  env["MASTER_PORT"] = "70000";
  EXPECT_NE(error_of(env).find("MASTER_PORT"), std::string::npos);
  env.erase("MASTER_PORT");
  EXPECT_NE(error_of(env).find("MASTER_PORT is not set"), std::string::npos) << error_of(env);
}

Env slurm_step() {
  return {{"SLURM_PROCID", "5"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NUM_TASKS", "6"},
          {"SLURM_NTASKS", "12"},  // the allocation's; the step's count wins
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "2"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x3)"},
          {"SLURM_STEP_NODELIST", "gpu[07-09]"},
          {"SLURM_JOB_NODELIST", "gpu[01-09]"},
          {"SLURM_JOB_ID", "81234"}};
}

TEST(JobEnvironment, SlurmStepVariables) {
  Env env = slurm_step();
  JobEnvironment j = read_job_environment(lookup(env));
  // The step's first node, on a port every task derives from the job id.
  expect_job(j, "Slurm", 5, 6, 1, 2, 2, "gpu07:22340");
  env["MTF_COORDINATOR_PORT"] = "31000";
  EXPECT_EQ(read_job_environment(lookup(env)).coordinator, "gpu07:31000");
  env["MASTER_ADDR"] = "head";
  env["MASTER_PORT"] = "29500";
  EXPECT_EQ(read_job_environment(lookup(env)).coordinator, "head:29500");
  env["MTF_COORDINATOR"] = "10.0.0.1:4000";
  EXPECT_EQ(read_job_environment(lookup(env)).coordinator, "10.0.0.1:4000");
}

TEST(JobEnvironment, ABatchScriptOutsideAStepIsNotAJob) {
  Env env = slurm_step();
  env.erase("SLURM_STEP_ID");
  EXPECT_EQ(job_environment_source(lookup(env)), "");
  env["SLURM_STEPID"] = "3";  // older Slurm's name
  EXPECT_EQ(job_environment_source(lookup(env)), "Slurm");
}

TEST(JobEnvironment, MtfVariablesWinOverTorchrunOverSlurm) {
  Env env = slurm_step();
  env.insert({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(job_environment_source(lookup(env)), "torchrun");
  env.insert({{"MTF_RANK", "0"}, {"MTF_WORLD_SIZE", "1"}});
  EXPECT_EQ(job_environment_source(lookup(env)), "MTF_*");
}

TEST(JobEnvironment, TokenFromAFile) {
  char path[] = "/tmp/mtf_token_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs("  5f1e0c-shared-secret\n", f);
  std::fclose(f);
  Env env = {{"MTF_RANK", "0"}, {"MTF_WORLD_SIZE", "1"}, {"MTF_JOB_TOKEN_FILE", path}};
  EXPECT_EQ(read_job_environment(lookup(env)).token, "5f1e0c-shared-secret");
  env["MTF_JOB_TOKEN"] = "from-the-variable";  // the variable wins
  EXPECT_EQ(read_job_environment(lookup(env)).token, "from-the-variable");
  std::remove(path);
  env.erase("MTF_JOB_TOKEN");
  EXPECT_NE(error_of(env).find(path), std::string::npos) << error_of(env);
}

TEST(JobEnvironment, MalformedValuesNameTheVariable) {
  EXPECT_NE(error_of({{"MTF_RANK", "x"}, {"MTF_WORLD_SIZE", "2"}}).find("MTF_RANK=\"x\""),
            std::string::npos);
  EXPECT_NE(error_of({{"MTF_RANK", "2"}, {"MTF_WORLD_SIZE", "2"}}).find("rank 2 is outside 0..1"),
            std::string::npos);
  Env env = slurm_step();
  env["SLURM_PROCID"] = "6";
  EXPECT_NE(error_of(env).find("rank 6 is outside 0..5"), std::string::npos) << error_of(env);
  env = slurm_step();
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x2)";  // only two nodes listed; this is node 2
  EXPECT_NE(error_of(env).find("lists 2 nodes"), std::string::npos) << error_of(env);
  env = slurm_step();
  env.erase("SLURM_STEP_NODELIST");
  env.erase("SLURM_JOB_NODELIST");
  EXPECT_NE(error_of(env).find("rank 0's address is unknown"), std::string::npos);
}

TEST(SlurmLists, FirstHost) {
  EXPECT_EQ(first_slurm_host("node1"), "node1");
  EXPECT_EQ(first_slurm_host("a,b"), "a");
  EXPECT_EQ(first_slurm_host("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(first_slurm_host("rack[3,5]-n[01-04]"), "rack3-n01");
  EXPECT_THROW(first_slurm_host(""), ValueError);
  EXPECT_THROW(first_slurm_host("node[1-2"), ValueError);
  EXPECT_THROW(first_slurm_host("node[a-b]"), ValueError);
}

TEST(SlurmLists, TasksPerNode) {
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_THROW(slurm_tasks_on_node("2(x3),1", 4), ValueError);
  EXPECT_THROW(slurm_tasks_on_node("2(3)", 0), ValueError);
  EXPECT_THROW(slurm_tasks_on_node("two", 0), ValueError);
  EXPECT_THROW(slurm_tasks_on_node("2(x0)", 0), ValueError);
}

// What "auto" joins, from this process's environment (set and restored here).
TEST(JobEnvironment, AutoTransportFollowsTheSource) {
  const char* names[] = {"MTF_RANK",      "MTF_WORLD_SIZE", "RANK",
                         "WORLD_SIZE",    "MASTER_ADDR",    "SLURM_PROCID",
                         "SLURM_STEP_ID", "SLURM_NTASKS",   "OMPI_COMM_WORLD_SIZE",
                         "PMI_SIZE",      "PMIX_RANK",      "MPI_LOCALNRANKS"};
  std::map<std::string, std::string> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved[n] = v;
  for (const char* n : names) unsetenv(n);
  EXPECT_EQ(process_transport_kind("auto"), "none");
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  setenv("SLURM_NTASKS", "2", 1);
  EXPECT_EQ(process_transport_kind("auto"), "tcp");  // srun without MPI
  setenv("MTF_RANK", "0", 1);
  setenv("MTF_WORLD_SIZE", "2", 1);
  EXPECT_EQ(process_transport_kind("auto"), "tcp");
  EXPECT_EQ(process_transport_kind("none"), "none");
  EXPECT_THROW(process_transport_kind("udp"), ValueError);
  for (const char* n : names) unsetenv(n);
  for (const auto& [n, v] : saved) setenv(n.c_str(), v.c_str(), 1);
}

}  // namespace
}  // namespace mtf
