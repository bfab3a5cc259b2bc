// The bool dtype: what comparisons return and logical ops, where and masks
// take; how it moves over every layout and mesh implementation, how it is
// fed, fetched, cast and checkpointed, and the errors where a bool would
// need arithmetic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "kernels/kernels.h"
#include "mtf/checkpoint.h"
#include "tcp_world.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

const Dimension kRows{"r", 4}, kCols{"c", 6};

// Bytes of a bool host tensor, for comparing with expectations.
std::vector<int> bytes_of(const HostTensor& t) {
  EXPECT_EQ(t.dtype(), bool_);
  std::vector<int> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.data<uint8_t>()[i]);
  return v;
}

TEST(BoolDType, HostTensorConversions) {
  EXPECT_EQ(dtype_size(bool_), 1u);
  EXPECT_EQ(dtype_name(bool_), "bool");
  DType d;
  ASSERT_TRUE(dtype_from_name("bool", &d));
  EXPECT_EQ(d, bool_);
  const HostTensor f = HostTensor::from_floats(Shape({{"n", 5}}), {0.f, -0.f, 2.5f, NAN, -1.f});
  EXPECT_EQ(bytes_of(f.as_dtype(bool_)), (std::vector<int>{0, 0, 1, 1, 1}));  // NaN is true
  EXPECT_EQ(bytes_of(f.as_dtype(bfloat16).as_dtype(bool_)), (std::vector<int>{0, 0, 1, 1, 1}));
  const HostTensor b = HostTensor::from_bools(Shape({{"n", 3}}), {true, false, true});
  EXPECT_EQ(b.num_bytes(), 3u);
  EXPECT_EQ(b.to_floats(), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(b.as_dtype(int32).to_ints(), (std::vector<int32_t>{1, 0, 1}));
  EXPECT_EQ(b.as_dtype(bfloat16).to_floats(), (std::vector<float>{1, 0, 1}));
  EXPECT_THROW(b.data<int32_t>(), DTypeError);
  EXPECT_THROW(f.data<uint8_t>(), DTypeError);
  EXPECT_THROW(HostTensor::from_bools(Shape({{"n", 2}}), {true}), ValueError);
}

// The cast kernel to and from bool in one pass (NaN true, either zero
// false; bool to 0 or 1 in each dtype), and comparisons of float32 and
// int32 slices writing bool bytes themselves (an int32 output when the op
// runs widened, as for bfloat16 operands).
TEST(BoolDType, CastAndComparisonKernelsWriteBoolsThemselves) {
  const Shape n5({{"n", 5}});
  const HostTensor f = HostTensor::from_floats(n5, {0.f, -0.f, 2.5f, NAN, -1.f});
  for (DType from : {float32, bfloat16}) {
    HostTensor b(n5, bool_);
    kernels::cast(f.as_dtype(from), b);
    EXPECT_EQ(bytes_of(b), (std::vector<int>{0, 0, 1, 1, 1})) << dtype_name(from);
  }
  HostTensor from_ints(n5, bool_);
  kernels::cast(HostTensor::from_ints(n5, {0, 7, 0, -3, 1}), from_ints);
  EXPECT_EQ(bytes_of(from_ints), (std::vector<int>{0, 1, 0, 1, 1}));
  const HostTensor b = HostTensor::from_bools(Shape({{"n", 3}}), {true, false, true});
  for (DType to : {float32, bfloat16, int32}) {
    HostTensor y(b.shape(), to);
    kernels::cast(b, y);
    EXPECT_EQ(y.to_floats(), (std::vector<float>{1, 0, 1})) << dtype_name(to);
  }
  const HostTensor a = HostTensor::from_floats(n5, {1, 2, 3, NAN, -1});
  const HostTensor two = HostTensor::from_floats(Shape({}), {2});
  HostTensor less(n5, bool_), wide(n5, int32);
  kernels::binary(kernels::BinaryFn::kLess, a, two, less);
  EXPECT_EQ(bytes_of(less), (std::vector<int>{1, 0, 0, 0, 1}));
  kernels::binary(kernels::BinaryFn::kGreaterEqual, a, two, wide);
  EXPECT_EQ(wide.to_ints(), (std::vector<int32_t>{0, 1, 1, 0, 0}));
}

// Comparisons, logical ops, where, casts and bools moved by transposes,
// shifts, slices, concatenation, gathers and split layouts (allgathers,
// halo exchanges) — on each layout and both mesh implementations, the
// one-processor results.
// A graph of bool tensors: comparisons (with broadcast), logic, where, casts,
// reductions and every kind of movement, and its feeds.
struct BoolGraph {
  Graph g;
  Mesh mesh{g, "mesh"};
  HostTensor av = testing::random_tensor(Shape({kRows, kCols}), 1);
  HostTensor bv = testing::random_tensor(Shape({kCols}), 2);
  HostTensor mv{Shape({kRows, kCols}), bool_};
  Tensor a, b, mask;
  std::vector<Tensor> outs;
  BoolGraph() {
    a = placeholder(mesh, av.shape(), float32, "a");
    b = placeholder(mesh, bv.shape(), float32, "b");
    const Tensor gt = greater(a, b);  // bool [r, c], broadcast
    const Tensor lt = less(a, constant(mesh, 0.f));
    mask = placeholder(mesh, Shape({kRows, kCols}), bool_, "mask");
    const Tensor both = logical_and(gt, mask);
    outs = {gt,
            logical_not(gt),
            both,
            logical_or(lt, mask),
            equal(gt, mask),
            where(gt, a, -a),
            cast(gt, float32),
            cast(lt, int32),
            reduce_any(both, "c"),
            reduce_all(gt, "r"),
            transpose(both, Shape({kCols, kRows})),
            shift(both, 1, "c", true),
            shift(both, -2, "r", false),
            slice(gt, 2, 2, "c"),
            concat({gt, mask}, "c"),
            gather(mask, range(mesh, Dimension{"k", 3}, int32) + 1.f, kRows),
            cast(where(logical_not(mask), cast(a, bfloat16), cast(a, bfloat16) * 2.f), float32)};
    const HostTensor maskv = testing::random_tensor(mask.shape(), 3);
    for (int64_t i = 0; i < mv.num_elements(); ++i)
      mv.data<uint8_t>()[i] = maskv.data<float>()[i] > 0;
  }
  std::vector<HostTensor> run(Session& s) const {
    return s.run(outs, {{a, av}, {b, bv}, {mask, mv}});
  }
};

// Every output of `got` has the bytes of `want`'s.
void expect_same_bytes(const std::vector<HostTensor>& want, const std::vector<HostTensor>& got,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].num_bytes(), want[i].num_bytes()) << what << ", output " << i;
    EXPECT_EQ(0, std::memcmp(got[i].raw_data(), want[i].raw_data(), want[i].num_bytes()))
        << what << ", output " << i;
  }
}

TEST(BoolDType, ComparisonsLogicAndMovementOnEveryLayout) {
  std::vector<std::vector<HostTensor>> results;
  struct Case {
    const char* mesh;
    const char* layout;
    MeshImpl impl;
  };
  for (const Case& k : {Case{"", "", MeshImpl::kSimd}, Case{"x:2", "c:x", MeshImpl::kSimd},
                        Case{"x:2;y:2", "r:x;c:y", MeshImpl::kSimd},
                        Case{"x:2;y:2", "r:y;c:x", MeshImpl::kPlacement}}) {
    SCOPED_TRACE(std::string(k.mesh) + " " + k.layout);
    BoolGraph bg;
    const std::vector<Tensor>& outs = bg.outs;
    const HostTensor &av = bg.av, &bv = bg.bv, &mv = bg.mv;
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(outs[i].dtype(), bool_) << i;
    Session s(bg.g, mesh_config(k.mesh, k.layout, k.impl));
    results.push_back(bg.run(s));
    const std::vector<HostTensor>& got = results.back();
    const float* pa = av.data<float>();
    const float* pb = bv.data<float>();
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        const int e = i * 6 + j;
        const bool g_ = pa[e] > pb[j], m = mv.data<uint8_t>()[e];
        EXPECT_EQ(bytes_of(got[0])[e], g_);
        EXPECT_EQ(bytes_of(got[1])[e], !g_);
        EXPECT_EQ(bytes_of(got[2])[e], g_ && m);
        EXPECT_EQ(bytes_of(got[3])[e], pa[e] < 0 || m);
        EXPECT_EQ(bytes_of(got[4])[e], g_ == m);
        EXPECT_EQ(got[5].to_floats()[e], g_ ? pa[e] : -pa[e]);
        EXPECT_EQ(got[6].to_floats()[e], g_ ? 1.f : 0.f);
        EXPECT_EQ(got[7].to_ints()[e], pa[e] < 0 ? 1 : 0);
        EXPECT_EQ(bytes_of(got[10])[j * 4 + i], g_ && m);
        EXPECT_EQ(bytes_of(got[11])[i * 6 + (j + 1) % 6], bytes_of(got[2])[e]);  // shift, wrap
      }
    for (int i = 0; i < 4; ++i) {
      bool any = false;
      for (int j = 0; j < 6; ++j) any = any || bytes_of(got[2])[i * 6 + j];
      EXPECT_EQ(bytes_of(got[8])[i], any) << "reduce_any, row " << i;
    }
    for (int j = 0; j < 6; ++j) {
      bool all = true;
      for (int i = 0; i < 4; ++i) all = all && bytes_of(got[0])[i * 6 + j];
      EXPECT_EQ(bytes_of(got[9])[j], all) << "reduce_all, column " << j;
    }
    EXPECT_EQ(got[14].shape()[1].size, 12);
    for (size_t i = 8; i < got.size(); ++i) {
      if (i != 16) {
        EXPECT_EQ(got[i].dtype(), bool_) << i;
      }
    }
  }
  // Every layout and implementation moved the same bytes.
  for (size_t r = 1; r < results.size(); ++r)
    expect_same_bytes(results[0], results[r], "layout " + std::to_string(r));
}

// The same graph as a 4-process job (ranks as threads here, over loopback
// TCP, then over shared-memory links): bools cross processes in the halo
// exchange of the wrap shift, the gathers of concat, gather and the
// fetches, and come out with the one-process bytes.
TEST(BoolDType, CrossesProcessesWithTheOneProcessBytes) {
  std::vector<HostTensor> want;
  {
    BoolGraph bg;
    Session s(bg.g);
    want = bg.run(s);
  }
  for (bool shared_memory : {false, true}) {
    SCOPED_TRACE(shared_memory ? "shared memory" : "tcp");
    const int port = testing::free_port();
    std::vector<std::string> errors(4);
    std::vector<std::vector<HostTensor>> got(4);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 4; ++r) {
      ranks.emplace_back([&, r] {
        try {
          BoolGraph bg;
          MeshConfig c = mesh_config("x:2;y:2", "r:x;c:y");
          c.process_transport = connect_tcp(
              testing::tcp_options(r, 4, port, std::chrono::seconds(20), shared_memory));
          Session s(bg.g, c);
          got[r] = bg.run(s);
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(errors[r], "") << "rank " << r;
      expect_same_bytes(want, got[r], "rank " + std::to_string(r));
    }
  }
}

TEST(BoolDType, ArithmeticOnBoolsIsRefusedWithHowToCast) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, Shape({kRows}), float32, "x");
  const Tensor m = greater(x, constant(mesh, 0.f));
  auto expect_refused = [](const std::function<void()>& f, const char* op) {
    try {
      f();
      ADD_FAILURE() << op << " on a bool was accepted";
    } catch (const DTypeError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(op), std::string::npos) << what;
      EXPECT_NE(what.find("is bool"), std::string::npos) << what;
      EXPECT_NE(what.find("cast"), std::string::npos) << what;
    }
  };
  expect_refused([&] { (void)(m + m); }, "add");
  expect_refused([&] { (void)(m * 2.f); }, "multiply");
  expect_refused([&] { (void)less(m, m); }, "less");
  expect_refused([&] { (void)exp(m); }, "exp");
  expect_refused([&] { (void)reduce_sum(m); }, "reduce_sum");
  expect_refused([&] { (void)einsum({m, m}, Shape()); }, "einsum");
  const Tensor flags = get_variable(mesh, "flags", Shape({kRows}), Initializer::zeros(), bool_);
  expect_refused([&] { (void)assign_add(flags, m); }, "assign_add");
  EXPECT_THROW(get_variable(mesh, "mixed", Shape({kRows}), Initializer::zeros(),
                            VariableDType(float32, bool_, bool_)),
               DTypeError);
  // What works on bools: equality, minimum / maximum, the logical ops.
  EXPECT_EQ(equal(m, m).dtype(), bool_);
  EXPECT_EQ(maximum(m, m).dtype(), bool_);
}

// A bool variable: assigned from a comparison on a split layout, saved,
// and restored bit for bit into another mesh.
TEST(BoolDType, VariablesAssignAndCheckpointAcrossMeshes) {
  const std::string path = "/tmp/mtf_bool_ckpt_" + std::to_string(::getpid()) + ".h5";
  const HostTensor xv = testing::random_tensor(Shape({kRows, kCols}), 7);
  HostTensor saved;
  {
    Graph g;
    Mesh mesh(g, "mesh");
    const Tensor x = placeholder(mesh, xv.shape(), float32, "x");
    const Tensor flags =
        get_variable(mesh, "flags", xv.shape(), Initializer::zeros(), VariableDType::of(bool_));
    EXPECT_EQ(flags.dtype(), bool_);
    Operation* set = assign(flags, greater(x, constant(mesh, 0.f)));
    Session s(g, mesh_config("x:2;y:2", "r:x;c:y"));
    EXPECT_EQ(bytes_of(s.run({flags})[0]), std::vector<int>(24, 0));
    s.run({}, {{x, xv}}, {set});
    saved = s.variable_value("flags");
    for (int64_t i = 0; i < 24; ++i)
      EXPECT_EQ(saved.data<uint8_t>()[i], xv.data<float>()[i] > 0) << i;
    save_checkpoint(s, path, 1);
  }
  EXPECT_EQ(read_checkpoint_variable(path, "flags").dtype(), bool_);
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor flags =
      get_variable(mesh, "flags", xv.shape(), Initializer::zeros(), VariableDType::of(bool_));
  Session s(g, mesh_config("x:3", "", MeshImpl::kPlacement));
  restore_checkpoint(s, path);
  const HostTensor back = s.run({flags})[0];
  EXPECT_EQ(bytes_of(back), bytes_of(saved));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mtf
