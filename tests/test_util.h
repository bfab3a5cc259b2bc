// test_util.h — helpers shared by the tests: random host data, plain-loop
// index helpers for reference implementations, and a finite-difference
// gradient checker.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::testing {

// A TCP port on the loopback interface that was free a moment ago.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// ASan reports false stack overflows when an exception unwinds a Boost.Fiber
// stack (google/sanitizers#189; Debian's Boost.Context has no ASan hooks), so
// tests that throw inside fibers skip under it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// A Session's config for a mesh and layout ("" and "": one processor).
inline MeshConfig mesh_config(const char* mesh_shape, const char* layout,
                              MeshImpl impl = MeshImpl::kSimd, bool reproducible = true) {
  MeshConfig mc;
  mc.mesh_shape = MeshShape(mesh_shape);
  mc.layout = LayoutRules(layout);
  mc.impl = impl;
  mc.reproducible = reproducible;
  return mc;
}

using Index = std::map<std::string, int64_t>;

// True when a and b have one shape and dtype and the same bytes.
inline bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()) == 0;
}

inline HostTensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.f,
                                float hi = 1.f) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(shape.num_elements());
  for (auto& x : v) x = d(rng);
  return HostTensor::from_floats(shape, v);
}

// Calls f(index by name, flat position) for every element of shape, row-major.
inline void for_each_index(const Shape& shape,
                           const std::function<void(const Index&, int64_t)>& f) {
  const int64_t n = shape.num_elements();
  std::vector<int64_t> idx(shape.ndims(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    Index m;
    for (int d = 0; d < shape.ndims(); ++d) m[shape[d].name] = idx[d];
    f(m, flat);
    for (int d = shape.ndims() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d].size) break;
      idx[d] = 0;
    }
  }
}

// Flat position of the element of `shape` at the named index (extra names ignored).
inline int64_t offset_of(const Shape& shape, const Index& idx) {
  int64_t off = 0;
  const auto strides = shape.strides();
  for (int d = 0; d < shape.ndims(); ++d) off += idx.at(shape[d].name) * strides[d];
  return off;
}

inline std::vector<float> eval(const Tensor& t, const Feeds& feeds = {}) {
  Session s(t.graph());
  return s.run(t, feeds).to_floats();
}

// Reference einsum by brute force over the union of dimensions.
inline std::vector<float> ref_einsum(const std::vector<HostTensor>& ins, const Shape& out) {
  Shape all;
  for (const auto& t : ins) all = all.union_with(t.shape());
  std::vector<double> r(out.num_elements(), 0.0);
  std::vector<std::vector<float>> vals;
  for (const auto& t : ins) vals.push_back(t.to_floats());
  for_each_index(all, [&](const Index& i, int64_t) {
    double p = 1;
    for (size_t k = 0; k < ins.size(); ++k) p *= vals[k][offset_of(ins[k].shape(), i)];
    r[offset_of(out, i)] += p;
  });
  return std::vector<float>(r.begin(), r.end());
}

inline void expect_near_vectors(const std::vector<float>& got, const std::vector<float>& want,
                                float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float scale = std::max(1.f, std::fabs(want[i]));
    EXPECT_NEAR(got[i], want[i], tol * scale) << "at element " << i;
  }
}

// Elementwise within 1e-5 relative (absolute below 1): the tolerance for
// results that differ only in the order of float reductions.
inline void expect_close(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_floats(), w = want.to_floats();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], 1e-5f * std::max(1.f, std::fabs(w[i]))) << what << " element " << i;
}

// Input generators for gradient checks.
using Generator = std::function<HostTensor(const Shape&, uint64_t)>;
inline Generator uniform(float lo, float hi) {
  return [=](const Shape& s, uint64_t seed) { return random_tensor(s, seed, lo, hi); };
}
// Values with |x| in [0.2, 1.2]: no kink of relu/abs/sign within the FD step.
inline Generator away_from_zero() {
  return [](const Shape& s, uint64_t seed) {
    HostTensor t = random_tensor(s, seed, -1.f, 1.f);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = (p[i] < 0 ? -0.2f : 0.2f) + p[i];
    return t;
  };
}
// Distinct values at least 0.1 apart (for max/min/top_k).
inline Generator distinct() {
  return [](const Shape& s, uint64_t seed) {
    const int64_t n = s.num_elements();
    std::vector<float> v(n);
    // Inputs of odd and even seeds interleave (0.05 apart), so they never tie either.
    const float shift = 0.05f * static_cast<float>(seed % 2);
    for (int64_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(i) - 0.05f * n + shift;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (int64_t i = n - 1; i > 0; --i) std::swap(v[i], v[rng() % (i + 1)]);
    return HostTensor::from_floats(s, v);
  };
}

// Checks gradients({sum(f(x) * w)}, x) against central finite differences
// for each input x of the given shapes; w is a fixed random weighting.
inline void check_gradients(const std::vector<Shape>& shapes,
                            const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            Generator gen = uniform(-1.f, 1.f), float eps = 1e-2f,
                            float tol = 2e-2f) {
  Graph g;
  Mesh mesh(g, "mesh");
  std::vector<Tensor> xs;
  for (size_t i = 0; i < shapes.size(); ++i)
    xs.push_back(placeholder(mesh, shapes[i], float32, "x" + std::to_string(i)));
  Tensor y = f(xs);
  Tensor w = import_host(mesh, random_tensor(y.shape(), 99, 0.5f, 1.5f));
  Tensor loss = reduce_sum(y * w);
  std::vector<Tensor> grads = gradients({loss}, xs);
  Session s(g);
  std::vector<HostTensor> values;
  for (size_t i = 0; i < shapes.size(); ++i) values.push_back(gen(shapes[i], 1000 + i));
  auto feeds = [&]() {
    Feeds fd;
    for (size_t i = 0; i < xs.size(); ++i) fd.emplace_back(xs[i], values[i]);
    return fd;
  };
  auto loss_at = [&]() {
    s.set_run_counter(7);
    return static_cast<double>(s.run(loss, feeds()).data<float>()[0]);
  };
  s.set_run_counter(7);
  std::vector<HostTensor> analytic = s.run(grads, feeds());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(analytic[i].shape(), shapes[i]) << "gradient " << i << " has the wrong shape";
    const std::vector<float> a = analytic[i].to_floats();
    HostTensor original = values[i].clone();
    const int64_t n = shapes[i].num_elements();
    const int64_t stride = std::max<int64_t>(1, n / 24);  // at most ~24 probes per input
    for (int64_t j = 0; j < n; j += stride) {
      values[i] = original.clone();
      values[i].data<float>()[j] += eps;
      const double up = loss_at();
      values[i] = original.clone();
      values[i].data<float>()[j] -= eps;
      const double down = loss_at();
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(a[j], numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "input " << i << " element " << j;
    }
    values[i] = original;
  }
}

}  // namespace mtf::testing
