// Checkpoints: round trips between meshes, layouts and mesh implementations
// (bit for bit), optimizer state and run counter, partial restore with
// renames, the directory manager (latest pointer, keep K, stale temporary
// files), and clear errors for every kind of bad checkpoint — truncated and
// bit-flipped files at many positions included.
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
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "mtf/in_process_transport.h"
#include "mtf/tcp_transport.h"
#include "test_util.h"

namespace mtf {
namespace {

// Variables of several kinds trained by Adam (so there are optimizer slots
// and a step), plus an int32 counter and a scalar.
struct Model {
  Graph g;
  Mesh mesh{g, "mesh"};
  Dimension batch{"batch", 8}, d_in{"d_in", 6}, hidden{"hidden", 16}, out{"out", 4};
  Tensor x, loss;
  std::vector<Operation*> train;
  explicit Model(int64_t hidden_size = 16, const std::string& prefix = "") {
    hidden.size = hidden_size;
    x = placeholder(mesh, Shape({batch, d_in}), float32, "x");
    Tensor w1 = get_variable(mesh, prefix + "w1", Shape({d_in, hidden}));
    Tensor b1 = get_variable(mesh, prefix + "b1", Shape({hidden}), Initializer::constant(0.1f));
    Tensor w2 = get_variable(mesh, prefix + "w2", Shape({hidden, out}));
    Tensor scale = get_variable(mesh, prefix + "scale", Shape(), Initializer::constant(1.5f));
    get_variable(mesh, prefix + "counter", Shape({out}), Initializer::zeros(), int32, false);
    Tensor h = relu(einsum({x, w1}, Shape({batch, hidden})) + b1);
    loss = reduce_mean(square(einsum({h, w2}, Shape({batch, out})))) * scale;
    train = AdamOptimizer(0.01f).minimize(loss);
  }
  Feeds feeds(int step) { return {{x, testing::random_tensor(x.shape(), 100 + step)}}; }
};

MeshConfig mesh_config(const char* mesh, const char* layout, MeshImpl impl = MeshImpl::kSimd) {
  MeshConfig c;
  c.mesh_shape = MeshShape(mesh);
  c.layout = LayoutRules(layout);
  c.impl = impl;
  return c;
}

void expect_same_bits(const HostTensor& a, const HostTensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()), 0) << what;
}

std::string temp_dir(const std::string& name) {
  const std::string d =
      ::testing::TempDir() + "/mtf_ckpt_" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf '" + d + "'").c_str());
  ::mkdir(d.c_str(), 0755);
  return d;
}

// Names of the entries of `dir`.
std::vector<std::string> checkpoint_files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  return names;
}

struct MeshCase {
  const char* mesh;
  const char* layout;
  MeshImpl impl;
};

// Saved from one mesh, restored into another: every variable (optimizer
// slots and step included) bit for bit, the run counter too, and training
// goes on to the same numbers as on the saving mesh.
TEST(Checkpoint, RoundTripsBetweenMeshesLayoutsAndImplementations) {
  const std::vector<MeshCase> cases = {
      {"", "", MeshImpl::kSimd},
      {"all:2", "batch:all", MeshImpl::kSimd},
      {"all:4", "hidden:all", MeshImpl::kPlacement},
      {"all:8", "hidden:all", MeshImpl::kSimd},
      {"rows:2;cols:4", "batch:rows;hidden:cols", MeshImpl::kSimd},
      {"rows:4;cols:2", "hidden:rows;d_in:cols", MeshImpl::kPlacement},
      {"a:2;b:2;c:2", "batch:a;hidden:b;out:c", MeshImpl::kSimd},
      {"all:3", "d_in:all", MeshImpl::kSimd},
  };
  const std::string dir = temp_dir("roundtrip");
  for (size_t i = 0; i < cases.size(); ++i) {
    const MeshCase& from = cases[i];
    const MeshCase& to = cases[(i + 3) % cases.size()];
    SCOPED_TRACE(std::string("from ") + from.mesh + " / " + from.layout + " to " + to.mesh + " / " +
                 to.layout);
    Model a, b;
    Session sa(a.g, mesh_config(from.mesh, from.layout, from.impl));
    for (int step = 0; step < 3; ++step) sa.run({a.loss}, a.feeds(step), a.train);
    const std::string path = dir + "/c" + std::to_string(i) + ".h5";
    save_checkpoint(sa, path, 3, {{"note", "round trip"}});

    Session sb(b.g, mesh_config(to.mesh, to.layout, to.impl));
    const CheckpointInfo info = restore_checkpoint(sb, path);
    EXPECT_EQ(info.step, 3);
    EXPECT_EQ(info.mesh_shape, MeshShape(from.mesh).to_string());
    EXPECT_EQ(info.metadata.at("note"), "round trip");
    EXPECT_EQ(sb.run_counter(), sa.run_counter());
    for (const std::string& name : sa.variable_names())
      expect_same_bits(sb.variable_value(name), sa.variable_value(name), name);
    // The restored session trains on like the original (layouts agree to
    // rounding).
    const float la = sa.run({a.loss}, a.feeds(3), a.train)[0].data<float>()[0];
    const float lb = sb.run({b.loss}, b.feeds(3), b.train)[0].data<float>()[0];
    EXPECT_NEAR(lb, la, 1e-5 * std::abs(la));
  }
}

TEST(Checkpoint, RestoresIntoTheSimulatorFunctionalMode) {
  Model a, b;
  Session sa(a.g, mesh_config("rows:2;cols:4", "batch:rows;hidden:cols"));
  sa.run({a.loss}, a.feeds(0), a.train);
  const std::string path = temp_dir("sim") + "/c.h5";
  save_checkpoint(sa, path, 1);
  MeshConfig c = mesh_config("all:8", "hidden:all", MeshImpl::kSimulated);
  c.sim.topology = Topology::preset("tpu-v2-8");
  Session sb(b.g, c);
  restore_checkpoint(sb, path);
  for (const std::string& name : sa.variable_names())
    expect_same_bits(sb.variable_value(name), sa.variable_value(name), name);
}

TEST(Checkpoint, PartialRestoreWithRenames) {
  Model a;
  Session sa(a.g);
  sa.run({a.loss}, a.feeds(0), a.train);
  const std::string path = temp_dir("partial") + "/c.h5";
  save_checkpoint(sa, path, 1);

  // A model whose variables are named differently: initialise two of them.
  Model b(16, "enc/");
  Session sb(b.g, mesh_config("all:2", "hidden:all"));
  const HostTensor w2_before = sb.variable_value("enc/w2");
  RestoreOptions o;
  o.only = {"enc/w1", "enc/b1"};
  o.rename = {{"enc/w1", "w1"}, {"enc/b1", "b1"}};
  o.restore_run_counter = false;
  restore_checkpoint(sb, path, o);
  expect_same_bits(sb.variable_value("enc/w1"), sa.variable_value("w1"), "w1");
  expect_same_bits(sb.variable_value("enc/b1"), sa.variable_value("b1"), "b1");
  expect_same_bits(sb.variable_value("enc/w2"), w2_before, "w2 untouched");
  EXPECT_EQ(sb.run_counter(), 0u);

  // allow_missing: variables the file lacks keep their values.
  Model c(16, "other/");
  Session sc(c.g);
  RestoreOptions missing;
  missing.allow_missing = true;
  EXPECT_NO_THROW(restore_checkpoint(sc, path, missing));
  try {
    restore_checkpoint(sc, path);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("has no variable \"other/w1\""), std::string::npos)
        << e.what();
  }
  // One variable read whole.
  expect_same_bits(read_checkpoint_variable(path, "w1/adam_m"), sa.variable_value("w1/adam_m"),
                   "adam_m");
}

TEST(Checkpoint, MismatchesAreClearErrorsAndChangeNothing) {
  Model a;
  Session sa(a.g);
  const std::string path = temp_dir("mismatch") + "/c.h5";
  save_checkpoint(sa, path, 0);

  Model wider(32);  // hidden 32 instead of 16
  Session sw(wider.g);
  const HostTensor before = sw.variable_value("b1");
  try {
    restore_checkpoint(sw, path);
    FAIL();
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("variable \"w1\""), std::string::npos) << m;
    EXPECT_NE(m.find("[d_in:6, hidden:32]"), std::string::npos) << m;
    EXPECT_NE(m.find("[d_in:6, hidden:16]"), std::string::npos) << m;
  }
  expect_same_bits(sw.variable_value("b1"), before, "nothing restored after a failure");

  // Same sizes, another dimension name.
  Graph g;
  Mesh m(g, "m");
  get_variable(m, "w1", Shape({{"d_in", 6}, {"units", 16}}));
  Session s(g);
  RestoreOptions only_w1;
  only_w1.only = {"w1"};
  EXPECT_THROW(restore_checkpoint(s, path, only_w1), ShapeError);

  // Another dtype.
  Graph g2;
  Mesh m2(g2, "m");
  get_variable(m2, "counter", Shape({{"out", 4}}), Initializer::zeros(), float32);
  Session s2(g2);
  RestoreOptions only_counter;
  only_counter.only = {"counter"};
  try {
    restore_checkpoint(s2, path, only_counter);
    FAIL();
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, FilesThatAreNotCheckpoints) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("notckpt");
  EXPECT_THROW(restore_checkpoint(s, dir + "/missing.h5"), IoError);
  std::ofstream(dir + "/text.h5") << "hello, not a checkpoint at all\n";
  try {
    restore_checkpoint(s, dir + "/text.h5");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not an mtf checkpoint"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/empty.h5");
  EXPECT_THROW(restore_checkpoint(s, dir + "/empty.h5"), IoError);
  EXPECT_THROW(restore_checkpoint(s, dir), IoError);  // a directory
}

// Truncated at many lengths and with a bit flipped at many positions: every
// restore is an IoError (never a crash, never different numbers), and the
// session's variables are untouched.
TEST(Checkpoint, TruncatedAndCorruptedFilesAlwaysFailCleanly) {
  Model a;
  Session sa(a.g, mesh_config("all:2", "hidden:all"));
  sa.run({a.loss}, a.feeds(0), a.train);
  const std::string dir = temp_dir("corrupt");
  const std::string good = dir + "/good.h5";
  save_checkpoint(sa, good, 1);
  std::ifstream in(good, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);

  Model b;
  Session sb(b.g);
  const HostTensor before = sb.variable_value("w1");
  const std::string bad = dir + "/bad.h5";
  auto write = [&](const std::vector<char>& content) {
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  };
  std::mt19937 rng(7);
  int failures = 0, trials = 0;
  for (int i = 0; i < 60; ++i) {
    const size_t len = i < 10 ? static_cast<size_t>(i) * 40 : rng() % bytes.size();
    write(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len)));
    ++trials;
    try {
      restore_checkpoint(sb, bad);
    } catch (const IoError&) {
      ++failures;
    }
  }
  for (int i = 0; i < 300; ++i) {
    std::vector<char> flipped = bytes;
    const size_t pos = i < 64 ? static_cast<size_t>(i) * 8 : rng() % bytes.size();
    flipped[pos] = static_cast<char>(flipped[pos] ^ (1 << (rng() % 8)));
    write(flipped);
    ++trials;
    try {
      restore_checkpoint(sb, bad);
    } catch (const IoError&) {
      ++failures;
    }
  }
  EXPECT_EQ(failures, trials);
  expect_same_bits(sb.variable_value("w1"), before, "untouched");
  restore_checkpoint(sb, good);  // the good one still restores
  expect_same_bits(sb.variable_value("w1"), sa.variable_value("w1"), "w1");
}

TEST(CheckpointManager, KeepsTheNewestAndPointsToTheLatest) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("manager") + "/nested/ckpts";
  CheckpointManager m(dir, 2);
  EXPECT_FALSE(m.latest_path().has_value());
  EXPECT_FALSE(m.restore_latest(s).has_value());
  for (int step = 1; step <= 4; ++step) {
    s.run({a.loss}, a.feeds(step), a.train);
    m.save(s, step * 10, {{"data_position", std::to_string(step)}});
  }
  EXPECT_EQ(m.steps(), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(*m.latest_path(), dir + "/ckpt-40.h5");

  // A crashed writer's temporary file is never taken for a checkpoint and
  // goes away with the next save.
  std::ofstream(dir + "/.tmp-ckpt-50.h5-12345-0") << "partial";
  EXPECT_EQ(*m.latest_path(), dir + "/ckpt-40.h5");
  // Without the pointer, the newest complete file.
  std::remove((dir + "/latest").c_str());
  EXPECT_EQ(*m.latest_path(), dir + "/ckpt-40.h5");

  Model b;
  Session sb(b.g, mesh_config("all:4", "hidden:all"));
  const std::optional<CheckpointInfo> info = m.restore_latest(sb);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->step, 40);
  EXPECT_EQ(info->metadata.at("data_position"), "4");
  expect_same_bits(sb.variable_value("w2"), s.variable_value("w2"), "w2");

  m.save(s, 50);
  for (const std::string& n : {std::string(".tmp-ckpt-50.h5-12345-0")})
    EXPECT_FALSE(std::ifstream(dir + "/" + n).good()) << n;
  EXPECT_EQ(m.steps(), (std::vector<int64_t>{40, 50}));
  EXPECT_THROW(CheckpointManager("", 1), ValueError);
  EXPECT_THROW(CheckpointManager(dir, 0), ValueError);
}

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
  std::vector<std::string> errors(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      try {
        Model m;
        MeshConfig c = mesh_config("rows:2;cols:2", "batch:rows;hidden:cols");
        c.process_transport = tcp(r, 4);
        Session s(m.g, c);
        for (int step = 0; step < 2; ++step) s.run({m.loss}, m.feeds(step), m.train);
        CheckpointManager(dir, 2).save(s, 2, {{"who", "four processes"}});
        for (const std::string& name : s.variable_names()) values[r][name] = s.variable_value(name);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
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
  MeshConfig sc = mesh_config("all:8", "hidden:all", MeshImpl::kSimulated);
  sc.sim.topology = Topology::preset("tpu-v2-8");
  Session s8(sim.g, sc);
  restore_checkpoint(s8, path);
  for (const auto& [name, v] : values[0]) expect_same_bits(s8.variable_value(name), v, name);
  // Into two processes with another layout.
  std::vector<std::thread> two;
  std::vector<std::string> errors2(2);
  for (int r = 0; r < 2; ++r) {
    two.emplace_back([&, r] {
      try {
        Model m;
        MeshConfig c = mesh_config("all:2", "d_in:all");
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
      } catch (const std::exception& e) {
        errors2[r] = e.what();
      }
    });
  }
  for (auto& t : two) t.join();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors2[r], "") << "rank " << r;
}

// Runs body(rank, transport) on each of n ranks of an in-process job (one
// thread each); returns each rank's error, "" when it succeeded.
std::vector<std::string> run_job(int n,
                                 const std::function<void(int, std::shared_ptr<Transport>)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::shared_ptr<InProcessWorld> world = InProcessWorld::create(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      try {
        body(r, world->transport(r));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  return errors;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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
    MeshConfig c = mesh_config("all:4", "hidden:all");
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
  Session sb(b.g, mesh_config("all:2", "d_in:all"));
  const HostTensor before = sb.variable_value("w1");
  const std::string part = parts.files[2];
  const std::vector<char> bytes = read_bytes(part);
  auto expect_refused = [&](const std::string& what, const std::string& words) {
    try {
      restore_checkpoint(sb, dir + "/parts.h5");
      ADD_FAILURE() << what << ": restored";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << what << ": " << e.what();
    }
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
  restore_checkpoint(sb, dir + "/parts.h5");
  for (const auto& [name, v] : values) expect_same_bits(sb.variable_value(name), v, name);

  // Saved again over the same path: the new parts replace the old ones.
  const std::vector<std::string> errors2 = run_job(4, [&](int, std::shared_ptr<Transport> t) {
    Model m;
    MeshConfig c = mesh_config("all:4", "hidden:all");
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
      MeshConfig c = mesh_config("all:4", "hidden:all");
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
  Session reader(g, mesh_config("all:2", "b:all"));
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
