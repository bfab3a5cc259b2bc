// Checkpoints: round trips between meshes, layouts and mesh implementations
// (bit for bit), optimizer state and run counter, partial restore with
// renames, the directory manager (latest pointer, keep K, stale temporary
// files), and clear errors for every kind of bad checkpoint — truncated and
// bit-flipped files at many positions included. Checkpoints of multi-process
// jobs: checkpoint_jobs_test.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>

#include "checkpoint/h5.h"
#include "checkpoint/parts.h"
#include "checkpoint_test_util.h"
#include "expect_error.h"

namespace mtf {
namespace {

using testing::checkpoint_files_in;
using testing::expect_same_bits;
using testing::fast_config;
using testing::Model;
using testing::temp_dir;

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
    Session sa(a.g, fast_config(from.mesh, from.layout, from.impl));
    for (int step = 0; step < 3; ++step) sa.run({a.loss}, a.feeds(step), a.train);
    const std::string path = dir + "/c" + std::to_string(i) + ".h5";
    save_checkpoint(sa, path, 3, {{"note", "round trip"}});

    Session sb(b.g, fast_config(to.mesh, to.layout, to.impl));
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
  Session sa(a.g, fast_config("rows:2;cols:4", "batch:rows;hidden:cols"));
  sa.run({a.loss}, a.feeds(0), a.train);
  const std::string path = temp_dir("sim") + "/c.h5";
  save_checkpoint(sa, path, 1);
  MeshConfig c = fast_config("all:8", "hidden:all", MeshImpl::kSimulated);
  c.sim->topology = Topology::preset("tpu-v2-8");
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
  Session sb(b.g, fast_config("all:2", "hidden:all"));
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
  testing::expect_error<ValueError>([&] { restore_checkpoint(sc, path); },
                                    {"has no variable \"other/w1\""});
  // One variable read whole.
  expect_same_bits(read_checkpoint_variable(path, "w1/adam_m"), sa.variable_value("w1/adam_m"),
                   "adam_m");
}

// SaveOptions::skip leaves state out of the file; the rest restores with
// `only`, and restoring everything names the variable the file lacks.
TEST(Checkpoint, SkippedVariablesAreNotSaved) {
  Model a;
  Session sa(a.g);
  sa.run({a.loss}, a.feeds(0), a.train);
  const std::string dir = temp_dir("skip");
  CheckpointManager m(dir, 1);
  SaveOptions skip;
  skip.skip = {"w2"};
  m.set_save_options(skip);
  const std::string path = m.save(sa, 1);
  Model b;
  Session sb(b.g);
  const HostTensor w2_before = sb.variable_value("w2");
  RestoreOptions others;
  for (const std::string& n : sb.variable_names())
    if (n != "w2") others.only.push_back(n);
  restore_checkpoint(sb, path, others);
  expect_same_bits(sb.variable_value("w1"), sa.variable_value("w1"), "w1");
  expect_same_bits(sb.variable_value("w2"), w2_before, "w2 not in the file");
  testing::expect_error<ValueError>([&] { restore_checkpoint(sb, path); },
                                    {"has no variable \"w2\""});
}

// float32 and bfloat16 variables restore into each other: float32 ->
// bfloat16 rounds to nearest even, bfloat16 -> float32 is exact, on any
// mesh; a bfloat16 variable is saved as 16-bit words and comes back bit
// for bit.
TEST(Checkpoint, Float32AndBFloat16RestoreIntoEachOther) {
  const Shape shape({{"rows", 6}, {"cols", 4}});
  auto session_with = [&](DType dtype, const char* mesh, const char* layout) {
    auto g = std::make_unique<Graph>();
    Mesh m(*g, "m");
    get_variable(m, "w", shape, Initializer::normal(0.0f, 1.0f), dtype);
    MeshConfig c;
    c.mesh_shape = MeshShape(mesh);
    c.layout = LayoutRules(layout);
    auto s = std::make_unique<Session>(*g, c);
    return std::make_pair(std::move(g), std::move(s));
  };
  const std::string dir = temp_dir("dtypes");
  auto [g32, s32] = session_with(float32, "", "");
  const HostTensor f = s32->variable_value("w");
  save_checkpoint(*s32, dir + "/f32.h5", 0);
  auto [g16, s16] = session_with(bfloat16, "x:2", "rows:x");
  restore_checkpoint(*s16, dir + "/f32.h5");
  const HostTensor rounded = s16->variable_value("w");
  ASSERT_EQ(rounded.dtype(), bfloat16);
  expect_same_bits(rounded, f.as_dtype(bfloat16), "float32 into bfloat16: rounded");
  save_checkpoint(*s16, dir + "/bf16.h5", 0);
  auto [g16b, s16b] = session_with(bfloat16, "", "");
  restore_checkpoint(*s16b, dir + "/bf16.h5");
  expect_same_bits(s16b->variable_value("w"), rounded, "bfloat16 round trip");
  restore_checkpoint(*s32, dir + "/bf16.h5");
  expect_same_bits(s32->variable_value("w"), rounded.as_dtype(float32), "bfloat16 into float32");
}

TEST(Checkpoint, MismatchesAreClearErrorsAndChangeNothing) {
  Model a;
  Session sa(a.g);
  const std::string path = temp_dir("mismatch") + "/c.h5";
  save_checkpoint(sa, path, 0);

  Model wider(32);  // hidden 32 instead of 16
  Session sw(wider.g);
  const HostTensor before = sw.variable_value("b1");
  testing::expect_error<ShapeError>(
      [&] { restore_checkpoint(sw, path); },
      {"variable \"w1\"", "[d_in:6, hidden:32]", "[d_in:6, hidden:16]"});
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
  testing::expect_error<DTypeError>([&] { restore_checkpoint(s2, path, only_counter); }, {"int32"});
}

TEST(Checkpoint, FilesThatAreNotCheckpoints) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("notckpt");
  EXPECT_THROW(restore_checkpoint(s, dir + "/missing.h5"), IoError);
  std::ofstream(dir + "/text.h5") << "hello, not a checkpoint at all\n";
  testing::expect_error<IoError>([&] { restore_checkpoint(s, dir + "/text.h5"); },
                                 {"not an mtf checkpoint"});
  std::ofstream(dir + "/empty.h5");
  EXPECT_THROW(restore_checkpoint(s, dir + "/empty.h5"), IoError);
  EXPECT_THROW(restore_checkpoint(s, dir), IoError);  // a directory
  // A FIFO would block the first read forever: refused before it is opened.
  ASSERT_EQ(::mkfifo((dir + "/ckpt-40.h5").c_str(), 0600), 0);
  testing::expect_error<IoError>([&] { restore_checkpoint(s, dir + "/ckpt-40.h5"); },
                                 {"ckpt-40.h5", "not a regular file (a FIFO)"});
  testing::expect_error<IoError>([&] { read_checkpoint_info(dir + "/ckpt-40.h5"); }, {"a FIFO"});
  CheckpointManager fifo(dir, 2);
  testing::expect_error<IoError>([&] { fifo.restore_latest(s); }, {"a FIFO"});
}

// The pointer naming a file that is gone (deleted, renamed to .bak): the
// newest checkpoint present, or an error when there is none, never a fresh
// start; a name with leading zeros is used as it is.
TEST(CheckpointManager, APointerToAMissingFileIsNeverAFreshStart) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("pointer");
  CheckpointManager m(dir, 3);
  m.save(s, 30);
  m.save(s, 40);
  ASSERT_EQ(std::rename((dir + "/ckpt-40.h5").c_str(), (dir + "/ckpt-40.h5.bak").c_str()), 0);
  EXPECT_EQ(*m.latest_path(), dir + "/ckpt-30.h5");
  std::remove((dir + "/ckpt-30.h5").c_str());
  testing::expect_error<IoError>(
      [&] { m.latest_path(); },
      {"\"latest\" names \"ckpt-40.h5\", which is missing", "remove \"latest\" to start afresh"});
  EXPECT_THROW(m.restore_latest(s), IoError);

  const std::string zeros = temp_dir("zeros");
  CheckpointManager z(zeros, 1);
  z.save(s, 40);
  ASSERT_EQ(std::rename((zeros + "/ckpt-40.h5").c_str(), (zeros + "/ckpt-040.h5").c_str()), 0);
  std::remove((zeros + "/latest").c_str());
  EXPECT_EQ(*z.latest_path(), zeros + "/ckpt-040.h5");
  EXPECT_EQ(z.restore_latest(s)->step, 40);
  z.save(s, 50);  // keeps 1: the old file goes by its own name
  EXPECT_EQ(z.steps(), (std::vector<int64_t>{50}));
}

// A part list naming a path (a damaged or crafted file) leads neither the
// reader nor pruning outside the directory: the file next to the
// checkpoint directory survives the checkpoint's removal.
TEST(CheckpointManager, APartListNamingAPathRemovesNothingOutsideTheDirectory) {
  Model a;
  Session s(a.g);
  const std::string root = temp_dir("part_path");
  const std::string dir = root + "/ckpts";
  std::ofstream(root + "/victim.part0-of-1.0000000000000000") << "keep me";
  std::ofstream(root + "/victim") << "keep me";
  CheckpointManager m(dir, 1);
  m.save(s, 10);
  {
    checkpoint::h5::Lock lock;
    checkpoint::h5::Handle file = checkpoint::h5::open_file(dir + "/ckpt-10.h5", true);
    checkpoint::h5::write_strings(file, "mtf_parts",
                                  {"../victim", "../victim.part0-of-1.0000000000000000"},
                                  dir + "/ckpt-10.h5");
    file.close(dir + "/ckpt-10.h5");
  }
  testing::expect_error<IoError>([&] { checkpoint::part_names(dir + "/ckpt-10.h5"); },
                                 {"lists \"../victim\" as a part file"});
  m.save(s, 20);  // prunes ckpt-10.h5
  EXPECT_EQ(m.steps(), (std::vector<int64_t>{20}));
  EXPECT_TRUE(std::ifstream(root + "/victim").good());
  EXPECT_TRUE(std::ifstream(root + "/victim.part0-of-1.0000000000000000").good());
}

// Truncated at many lengths and with a bit flipped at many positions: every
// restore is an IoError (never a crash, never different numbers), and the
// session's variables are untouched.
TEST(Checkpoint, TruncatedAndCorruptedFilesAlwaysFailCleanly) {
  Model a;
  Session sa(a.g, fast_config("all:2", "hidden:all"));
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

// A latest checkpoint that fails its checks (truncated, or a bit flipped in
// its data): the newest older one that passes is used, and said; when none
// passes, an error naming each.
TEST(CheckpointManager, ADamagedLatestFallsBackToTheNewestThatPasses) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("damaged");
  CheckpointManager m(dir, 3);
  s.run({a.loss}, a.feeds(1), a.train);
  m.save(s, 10);
  const HostTensor at_10 = s.variable_value("w1");
  s.run({a.loss}, a.feeds(2), a.train);
  m.save(s, 20);
  s.run({a.loss}, a.feeds(3), a.train);
  m.save(s, 30);
  auto size_of = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  };
  // ckpt-30 truncated: header checks fail; ckpt-20's data damaged: only
  // its block checksums find it, as it is restored.
  ASSERT_EQ(::truncate((dir + "/ckpt-30.h5").c_str(), size_of(dir + "/ckpt-30.h5") / 2), 0);
  EXPECT_EQ(*m.latest_valid_path(), dir + "/ckpt-20.h5");
  {
    std::fstream f(dir + "/ckpt-20.h5", std::ios::in | std::ios::out | std::ios::binary);
    const int64_t size = size_of(dir + "/ckpt-20.h5");
    std::vector<char> bytes(static_cast<size_t>(size));
    f.read(bytes.data(), size);
    // The last stored block's bytes sit near the end, before the seal.
    const size_t pos = bytes.size() - 600;
    bytes[pos] = static_cast<char>(bytes[pos] ^ 0x10);
    f.seekp(0);
    f.write(bytes.data(), size);
  }
  Model b;
  Session sb(b.g);
  const std::optional<CheckpointInfo> info = m.restore_latest(sb);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->step, 10);
  expect_same_bits(sb.variable_value("w1"), at_10, "w1");
  std::remove((dir + "/ckpt-10.h5").c_str());
  std::remove((dir + "/ckpt-20.h5").c_str());
  testing::expect_error<IoError>([&] { m.restore_latest(sb); },
                                 {"no checkpoint passes its checks", "ckpt-30.h5"});
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
  Session sb(b.g, fast_config("all:4", "hidden:all"));
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

TEST(CheckpointManager, ResumingFromAnOlderStepReplacesTheLaterOnes) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("older_step");
  CheckpointManager m(dir, 3);
  for (int step = 1; step <= 3; ++step) {
    s.run({a.loss}, a.feeds(step), a.train);
    m.save(s, step * 10);
  }
  EXPECT_EQ(m.path_of_step(20), dir + "/ckpt-20.h5");
  try {
    m.path_of_step(25);
    ADD_FAILURE() << "no IoError for a step without a checkpoint";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("its steps: 10, 20, 30"), std::string::npos) << e.what();
  }
  // Resumed from step 10 (say the run diverged after it), the next save
  // removes 20 and 30: with keep 1 it would otherwise prune the new one and
  // keep the abandoned run's newest.
  CheckpointManager resumed(dir, 1);
  restore_checkpoint(s, resumed.path_of_step(10));
  s.run({a.loss}, a.feeds(11), a.train);
  resumed.save(s, 15);
  EXPECT_EQ(resumed.steps(), (std::vector<int64_t>{15}));
  EXPECT_EQ(*resumed.latest_valid_path(), dir + "/ckpt-15.h5");
  EXPECT_THROW(CheckpointManager(temp_dir("older_step_empty"), 1).path_of_step(0), IoError);
}

TEST(CheckpointManager, KeepsTheBestBesideTheNewest) {
  Model a;
  Session s(a.g);
  const std::string dir = temp_dir("best");
  CheckpointManager m(dir, 1);
  m.set_keep_best("loss", /*higher_is_better=*/false);
  auto save = [&](int64_t step, const char* loss) {
    s.run({a.loss}, a.feeds(static_cast<int>(step)), a.train);
    std::map<std::string, std::string> meta;
    if (loss) meta["loss"] = loss;
    m.save(s, step, meta);
  };
  save(1, "3");
  save(2, "1");
  save(3, "2");
  save(4, nullptr);  // no evaluation: never the best
  save(5, "1.5");
  EXPECT_EQ(m.steps(), (std::vector<int64_t>{2, 5}));  // the best and the newest
  ASSERT_TRUE(m.best().has_value());
  EXPECT_EQ(m.best()->first, dir + "/ckpt-2.h5");
  EXPECT_EQ(m.best()->second, 1.0);
  EXPECT_EQ(*m.latest_path(), dir + "/ckpt-5.h5");
  // The record outlives the manager: a resumed run (even one not asking
  // for the best) keeps it until a better one comes.
  CheckpointManager resumed(dir, 1);
  s.run({a.loss}, a.feeds(6), a.train);
  resumed.save(s, 6, {{"loss", "0.5"}});
  EXPECT_EQ(resumed.steps(), (std::vector<int64_t>{2, 6}));
  CheckpointManager again(dir, 1);
  again.set_keep_best("loss", false);
  s.run({a.loss}, a.feeds(7), a.train);
  again.save(s, 7, {{"loss", "1.25"}});  // not better than 1: ckpt-2 stays the best
  EXPECT_EQ(again.best()->first, dir + "/ckpt-2.h5");
  s.run({a.loss}, a.feeds(8), a.train);
  again.save(s, 8, {{"loss", "0.25"}});
  EXPECT_EQ(again.best()->first, dir + "/ckpt-8.h5");
  EXPECT_EQ(again.steps(), (std::vector<int64_t>{8}));
  // Higher is better, e.g. BLEU.
  CheckpointManager bleu(temp_dir("best_bleu"), 1);
  bleu.set_keep_best("bleu", /*higher_is_better=*/true);
  bleu.save(s, 1, {{"bleu", "10"}});
  bleu.save(s, 2, {{"bleu", "12.5"}});
  bleu.save(s, 3, {{"bleu", "11"}});
  EXPECT_EQ(bleu.best()->first, bleu.directory() + "/ckpt-2.h5");
  EXPECT_EQ(bleu.steps(), (std::vector<int64_t>{2, 3}));
  testing::expect_error<ValueError>(
      [&] {
        bleu.save(s, 4, {{"bleu", "high"}});
      },
      "\"bleu\" is \"high\", not a number", "nothing saved");
  EXPECT_EQ(bleu.steps(), (std::vector<int64_t>{2, 3}));
  testing::expect_error<ValueError>([&] { bleu.set_keep_best("", true); }, "metric name is empty");
}

}  // namespace
}  // namespace mtf
