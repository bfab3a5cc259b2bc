// Checkpoints of multi-process jobs: saved by 4 processes and restored
// anywhere, every rank writing its own part file (same bits as one file;
// missing, truncated and corrupted parts are clear errors), the manager
// pruning parts and a crashed save's leftovers, and writers killed at random
// moments never losing the previous checkpoint.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "checkpoint_test_util.h"
#include "expect_error.h"
#include "mtf/tcp_transport.h"

namespace mtf {
namespace {

using testing::checkpoint_files_in;
using testing::expect_same_bits;
using testing::fast_config;
using testing::Model;
using testing::read_bytes;
using testing::run_job;
using testing::run_ranks;
using testing::temp_dir;
using testing::write_bytes;

// A checkpoint saved by 4 processes (TCP, ranks as threads here) on
// rows:2;cols:2 restores, bit for bit, into one core, into 2 processes and
// into the simulator; each process wrote only the slices it owns.
TEST(Checkpoint, SavedByProcessesRestoresAnywhere) {
  const std::string dir = temp_dir("processes");
  const int port = testing::free_port();
  auto tcp = [&](int rank, int n) {
    TcpOptions o;
    o.rank = rank;
    o.world_size = n;
    o.coordinator = "127.0.0.1:" + std::to_string(port);
    o.token = "checkpoint-test-token";
    o.timeout = std::chrono::seconds(30);
    return std::shared_ptr<Transport>(connect_tcp(o));
  };
  std::vector<std::map<std::string, HostTensor>> values(4);
  const std::vector<std::string> errors = run_ranks(4, [&](int r) {
    Model m;
    MeshConfig c = fast_config("rows:2;cols:2", "batch:rows;hidden:cols");
    c.process_transport = tcp(r, 4);
    Session s(m.g, c);
    for (int step = 0; step < 2; ++step) s.run({m.loss}, m.feeds(step), m.train);
    CheckpointManager(dir, 2).save(s, 2, {{"who", "four processes"}});
    for (const std::string& name : s.variable_names()) values[r][name] = s.variable_value(name);
  });
  for (int r = 0; r < 4; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  const std::string path = dir + "/ckpt-2.h5";
  const CheckpointInfo saved = read_checkpoint_info(path);
  EXPECT_EQ(saved.mesh_shape, "rows:2;cols:2");
  // Replicas are written by their lowest holder: ranks 0 and 1 own every
  // distinct slice (hidden split over cols), so two part files.
  EXPECT_EQ(saved.format_version, 2);
  ASSERT_EQ(saved.files.size(), 3u);
  EXPECT_EQ(saved.files[0], path);

  // Into one core.
  Model one;
  Session s1(one.g);
  restore_checkpoint(s1, path);
  for (const auto& [name, v] : values[0]) expect_same_bits(s1.variable_value(name), v, name);
  // Into the simulator.
  Model sim;
  MeshConfig sc = fast_config("all:8", "hidden:all", MeshImpl::kSimulated);
  sc.sim->topology = Topology::preset("tpu-v2-8");
  Session s8(sim.g, sc);
  restore_checkpoint(s8, path);
  for (const auto& [name, v] : values[0]) expect_same_bits(s8.variable_value(name), v, name);
  // Into two processes with another layout.
  const std::vector<std::string> errors2 = run_ranks(2, [&](int r) {
    Model m;
    MeshConfig c = fast_config("all:2", "d_in:all");
    c.process_transport = tcp(r, 2);
    Session s(m.g, c);
    const auto info = CheckpointManager(dir, 2).restore_latest(s);
    if (!info || info->metadata.at("who") != "four processes") throw Error("no checkpoint");
    for (const auto& [name, v] : values[0]) {
      const HostTensor got = s.variable_value(name);
      if (got.num_bytes() != v.num_bytes() ||
          std::memcmp(got.raw_data(), v.raw_data(), v.num_bytes()) != 0)
        throw Error("variable " + name + " differs");
    }
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors2[r], "") << "rank " << r;
}

// Every rank of a 4-rank job writes its own part file; the checkpoint reads
// as the same tensors as one written in turn into one file. A missing,
// truncated or corrupted part is an IoError naming it, and changes nothing;
// saving over the checkpoint removes the parts it replaced.
TEST(Checkpoint, PartFilesFromEveryRank) {
  const std::string dir = temp_dir("parts");
  std::map<std::string, HostTensor> values;
  const std::vector<std::string> errors = run_job(4, [&](int rank, std::shared_ptr<Transport> t) {
    Model m;
    MeshConfig c = fast_config("all:4", "hidden:all");
    c.process_transport = std::move(t);
    Session s(m.g, c);
    s.run({m.loss}, m.feeds(0), m.train);
    save_checkpoint(s, dir + "/parts.h5", 1);
    SaveOptions one;
    one.files = SaveOptions::Files::kOneFile;
    save_checkpoint(s, dir + "/one.h5", 1, {}, one);
    for (const std::string& name : s.variable_names()) {
      HostTensor v = s.variable_value(name);  // a collective: every rank calls it
      if (rank == 0) values[name] = std::move(v);
    }
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  ASSERT_EQ(errors, std::vector<std::string>(4));
  const CheckpointInfo parts = read_checkpoint_info(dir + "/parts.h5");
  const CheckpointInfo one = read_checkpoint_info(dir + "/one.h5");
  EXPECT_EQ(parts.format_version, 2);
  EXPECT_EQ(one.format_version, 1);
  ASSERT_EQ(parts.files.size(), 5u);  // hidden is split 4 ways: every rank owns slices
  EXPECT_EQ(one.files, std::vector<std::string>{dir + "/one.h5"});
  for (int r = 0; r < 4; ++r) {
    const std::string& f = parts.files[static_cast<size_t>(r) + 1];
    EXPECT_NE(f.find("/parts.h5.part" + std::to_string(r) + "-of-4."), std::string::npos) << f;
  }
  for (const auto& [name, v] : values) {
    expect_same_bits(read_checkpoint_variable(dir + "/parts.h5", name), v, name + " (parts)");
    expect_same_bits(read_checkpoint_variable(dir + "/one.h5", name), v, name + " (one file)");
  }

  Model b;
  Session sb(b.g, fast_config("all:2", "d_in:all"));
  const HostTensor before = sb.variable_value("w1");
  const std::string part = parts.files[2];
  const std::vector<char> bytes = read_bytes(part);
  auto expect_refused = [&](const std::string& what, const std::string& words) {
    SCOPED_TRACE(what);
    testing::expect_error<IoError>([&] { restore_checkpoint(sb, dir + "/parts.h5"); }, words);
    expect_same_bits(sb.variable_value("w1"), before, what + ": untouched");
  };
  std::remove(part.c_str());
  expect_refused("a missing part", "is missing its part file \"" + part + "\"");
  write_bytes(part, std::vector<char>(bytes.begin(), bytes.begin() + 700));
  expect_refused("a truncated part", part);
  std::mt19937 rng(5);
  for (int i = 0; i < 60; ++i) {
    std::vector<char> flipped = bytes;
    const size_t pos = rng() % bytes.size();
    flipped[pos] = static_cast<char>(flipped[pos] ^ (1 << (rng() % 8)));
    write_bytes(part, flipped);
    expect_refused("a bit flipped at " + std::to_string(pos), "");
  }
  write_bytes(part, bytes);
  // Two part files swapped (each whole): named as such, not as a corrupted
  // checkpoint file.
  const std::string other = parts.files[3];
  const std::vector<char> other_bytes = read_bytes(other);
  write_bytes(part, other_bytes);
  write_bytes(other, bytes);
  expect_refused("swapped parts", "part file \"" + part + "\" of checkpoint \"" + dir +
                                      "/parts.h5\" holds part \"" +
                                      other.substr(other.rfind('/') + 1) +
                                      "\": the part files "
                                      "were swapped or renamed");
  write_bytes(part, bytes);
  write_bytes(other, other_bytes);
  restore_checkpoint(sb, dir + "/parts.h5");
  for (const auto& [name, v] : values) expect_same_bits(sb.variable_value(name), v, name);

  // Saved again over the same path: the new parts replace the old ones.
  const std::vector<std::string> errors2 = run_job(4, [&](int, std::shared_ptr<Transport> t) {
    Model m;
    MeshConfig c = fast_config("all:4", "hidden:all");
    c.process_transport = std::move(t);
    Session s(m.g, c);
    save_checkpoint(s, dir + "/parts.h5", 2);
  });
  for (int r = 0; r < 4; ++r) ASSERT_EQ(errors2[r], "") << "rank " << r;
  const CheckpointInfo again = read_checkpoint_info(dir + "/parts.h5");
  EXPECT_EQ(again.step, 2);
  for (size_t i = 1; i < parts.files.size(); ++i) {
    EXPECT_FALSE(std::ifstream(parts.files[i]).good()) << parts.files[i] << " left behind";
    EXPECT_TRUE(std::ifstream(again.files[i]).good()) << again.files[i];
  }
}

// The manager prunes checkpoints with their parts and, on its next save,
// removes part files no checkpoint lists (a crashed save's), never one a
// checkpoint lists.
TEST(CheckpointManager, PrunesPartsAndRemovesLeftoverParts) {
  const std::string dir = temp_dir("manager_parts");
  auto save_steps = [&](std::vector<int64_t> steps) {
    const std::vector<std::string> errors = run_job(4, [&](int, std::shared_ptr<Transport> t) {
      Model m;
      MeshConfig c = fast_config("all:4", "hidden:all");
      c.process_transport = std::move(t);
      Session s(m.g, c);
      CheckpointManager manager(dir, 2);
      for (int64_t step : steps) manager.save(s, step);
    });
    for (int r = 0; r < 4; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  };
  auto listing = [&] {
    std::vector<std::string> names = checkpoint_files_in(dir);
    std::sort(names.begin(), names.end());
    return names;
  };
  auto expected = [&](std::vector<int64_t> steps) {
    std::vector<std::string> names = {"latest"};
    for (int64_t step : steps) {
      for (const std::string& f :
           read_checkpoint_info(dir + "/ckpt-" + std::to_string(step) + ".h5").files)
        names.push_back(f.substr(dir.size() + 1));
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  save_steps({1, 2, 3, 4});
  EXPECT_EQ(CheckpointManager(dir, 2).steps(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(listing(), expected({3, 4}));
  EXPECT_EQ(listing().size(), 11u);  // 2 x (checkpoint + 4 parts) + latest

  // Leftovers of crashed saves: parts of a checkpoint that never appeared,
  // and a part of an existing checkpoint that it does not list.
  const std::vector<std::string> leftovers = {"ckpt-5.h5.part0-of-4.0123456789abcdef",
                                              "ckpt-4.h5.part3-of-4.00000000000000ff"};
  for (const std::string& n : leftovers) std::ofstream(dir + "/" + n) << "partial";
  std::ofstream(dir + "/notes.txt") << "a user's file";
  save_steps({6});
  EXPECT_EQ(CheckpointManager(dir, 2).steps(), (std::vector<int64_t>{4, 6}));
  std::vector<std::string> want = expected({4, 6});
  want.push_back("notes.txt");
  std::sort(want.begin(), want.end());
  EXPECT_EQ(listing(), want);
}

#ifndef MTF_CHECKPOINT_WRITER
#define MTF_CHECKPOINT_WRITER "checkpoint_writer"
#endif

// kill -9 of a writer at random moments, many times: the latest checkpoint
// always restores whole, every checkpoint file present is complete, no
// temporary file is ever taken for one, and part files that no checkpoint
// lists are at most those of the one save the kill interrupted (the next
// save removes them). `mode` is "" (one process) or "parts" (4 ranks, each
// writing its part file).
void kill_writer_at_random_moments(const std::string& name, const char* mode) {
  const std::string dir = temp_dir(name);
  Graph g;
  Mesh m(g, "m");
  get_variable(m, "w", Shape({{"a", 1024}, {"b", 512}}), Initializer::zeros());
  get_variable(m, "v", Shape({{"b", 512}, {"c", 512}}), Initializer::zeros());
  Session reader(g, fast_config("all:2", "b:all"));
  std::mt19937 rng(11);
  int64_t last_step = 0;
  // Kill moments start after the writer's start-up, which a loaded machine
  // or a sanitizer build slows: until one save has completed, each round
  // waits 40 ms longer.
  useconds_t startup = 20000;
  for (int round = 0; round < 25; ++round) {
    pid_t pid = 0;
    const char* argv[] = {MTF_CHECKPOINT_WRITER, dir.c_str(), mode, nullptr};
    ASSERT_EQ(posix_spawn(&pid, MTF_CHECKPOINT_WRITER, nullptr, nullptr,
                          const_cast<char* const*>(argv), environ),
              0)
        << "cannot start " << MTF_CHECKPOINT_WRITER;
    ::usleep(startup + rng() % 120000);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself, status " << status;

    CheckpointManager manager(dir, 3);
    const std::optional<std::string> latest = manager.latest_path();
    if (!latest) {  // killed before its first save finished
      if (last_step == 0) startup += 40000;
      continue;
    }
    const CheckpointInfo info = restore_checkpoint(reader, *latest);
    EXPECT_EQ(info.metadata.at("step"), std::to_string(info.step));
    const HostTensor w = reader.variable_value("w");
    for (int64_t i = 0; i < w.num_elements(); i += 4099)
      ASSERT_EQ(w.data<float>()[i], static_cast<float>(info.step)) << *latest;
    std::set<std::string> listed;
    for (int64_t step : manager.steps()) {
      const std::string p = dir + "/ckpt-" + std::to_string(step) + ".h5";
      EXPECT_NO_THROW(read_checkpoint_variable(p, "w")) << p;
      for (const std::string& f : read_checkpoint_info(p).files) listed.insert(f);
    }
    int unlisted = 0;
    for (const std::string& n : checkpoint_files_in(dir))
      if (n.find(".part") != std::string::npos && !listed.count(dir + "/" + n)) ++unlisted;
    EXPECT_LE(unlisted, 4) << "part files of more than one interrupted save";
    last_step = std::max<int64_t>(last_step, info.step);
  }
  EXPECT_GT(last_step, 0) << "no save ever completed";
}

TEST(CheckpointManager, SurvivesAWriterKilledAtAnyMoment) {
  kill_writer_at_random_moments("kill", nullptr);
}

TEST(CheckpointManager, SurvivesAJobWritingPartsKilledAtAnyMoment) {
  kill_writer_at_random_moments("kill_parts", "parts");
}

}  // namespace
}  // namespace mtf
