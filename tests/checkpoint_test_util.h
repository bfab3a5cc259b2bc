// checkpoint_test_util.h — what the checkpoint tests share: a model with
// variables of several kinds, mesh configurations, bit-for-bit comparison,
// scratch directories and files, and in-process jobs of ranks as threads.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mtf/in_process_transport.h"
#include "test_util.h"

namespace mtf::testing {

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

// The checkpoint tests run in fast mode (MeshConfig's default): restores
// must be exact whatever the kernels' order.
inline MeshConfig fast_config(const char* mesh, const char* layout,
                              MeshImpl impl = MeshImpl::kSimd) {
  return mesh_config(mesh, layout, impl, /*reproducible=*/false);
}

inline void expect_same_bits(const HostTensor& a, const HostTensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()), 0) << what;
}

inline std::string temp_dir(const std::string& name) {
  const std::string d =
      ::testing::TempDir() + "/mtf_ckpt_" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf '" + d + "'").c_str());
  ::mkdir(d.c_str(), 0755);
  return d;
}

// Names of the entries of `dir`.
inline std::vector<std::string> checkpoint_files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  return names;
}

// Runs body(rank, transport) on each of n ranks of an in-process job (one
// thread each); returns each rank's error, "" when it succeeded.
// Runs body(rank) for n ranks as threads; returns each rank's error ("" when
// none).
inline std::vector<std::string> run_ranks(int n, const std::function<void(int)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  return errors;
}

// run_ranks with an in-process transport for each rank.
inline std::vector<std::string> run_job(
    int n, const std::function<void(int, std::shared_ptr<Transport>)>& body) {
  std::shared_ptr<InProcessWorld> world = InProcessWorld::create(n);
  return run_ranks(n, [&](int r) { body(r, world->transport(r)); });
}

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace mtf::testing
