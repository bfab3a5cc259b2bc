// Collectives, Gloo-style: every algorithm over group sizes 1..32, element
// counts 0, 1, odd and large, float32 and int32, against exact answers
// (small integers, so float sums are exact); groups along the axes of 2-D
// and 3-D meshes; repeatability to the bit.
#include "mtf/collectives.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include "collectives/allreduce_algorithms.h"
#include "collectives/tags.h"
#include "expect_error.h"
#include "mtf/bfloat16.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"

namespace mtf {
namespace {

// A small integer per (rank, element): exact in float32 sums of 32 ranks.
int value(int rank, int64_t i) { return static_cast<int>((rank * 31 + i * 7) % 101) - 50; }

// Typed buffer helpers.
template <typename T>
std::vector<T> make(int rank, int64_t count, int64_t offset = 0) {
  std::vector<T> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<T>(value(rank, i + offset));
  return v;
}

// Allreduce by `algorithm` over n ranks, for every op, against exact answers.
template <typename T>
void expect_exact_allreduce_typed(int n, int64_t count, DType dtype, AllreduceAlgorithm algorithm) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    run_in_process(n, [&](Transport& t) {
      std::vector<T> v = make<T>(t.rank(), count);
      allreduce(t, Group::all(t.size(), t.rank()), v.data(), count, dtype, op, 1, algorithm);
      for (int64_t i = 0; i < count; ++i) {
        int want = value(0, i);
        for (int r = 1; r < t.size(); ++r) {
          const int x = value(r, i);
          want = op == ReduceOp::kSum
                     ? want + x
                     : (op == ReduceOp::kMax ? std::max(want, x) : std::min(want, x));
        }
        ASSERT_EQ(v[i], static_cast<T>(want)) << "rank " << t.rank() << " element " << i;
      }
    });
  }
}

void expect_exact_allreduce(int n, int64_t count, DType dtype, AllreduceAlgorithm algorithm) {
  if (dtype == float32) {
    expect_exact_allreduce_typed<float>(n, count, dtype, algorithm);
  } else {
    expect_exact_allreduce_typed<int32_t>(n, count, dtype, algorithm);
  }
}

using Param = std::tuple<int, int64_t, DType>;  // group size, count, dtype

class CollectivesTest : public ::testing::TestWithParam<Param> {
 protected:
  int n() const { return std::get<0>(GetParam()); }
  int64_t count() const { return std::get<1>(GetParam()); }
  DType dtype() const { return std::get<2>(GetParam()); }

  template <typename F>
  void typed(F f) {
    if (dtype() == float32)
      f(float{});
    else
      f(int32_t{});
  }
};

TEST_P(CollectivesTest, Allreduce) {
  expect_exact_allreduce(n(), count(), dtype(), AllreduceAlgorithm::kAuto);
}

TEST_P(CollectivesTest, ReduceScatter) {
  typed([&](auto zero) {
    using T = decltype(zero);
    run_in_process(n(), [&](Transport& t) {
      std::vector<T> in = make<T>(t.rank(), count() * t.size()), out(count());
      reduce_scatter(t, Group::all(t.size(), t.rank()), in.data(), out.data(), count(), dtype(),
                     ReduceOp::kSum, 2);
      for (int64_t i = 0; i < count(); ++i) {
        int want = 0;
        for (int r = 0; r < t.size(); ++r) want += value(r, t.rank() * count() + i);
        ASSERT_EQ(out[i], static_cast<T>(want)) << "rank " << t.rank() << " element " << i;
      }
    });
  });
}

TEST_P(CollectivesTest, AllgatherAlltoallBroadcast) {
  typed([&](auto zero) {
    using T = decltype(zero);
    run_in_process(n(), [&](Transport& t) {
      const Group g = Group::all(t.size(), t.rank());
      const int64_t c = count();
      std::vector<T> in = make<T>(t.rank(), c), out(c * t.size());
      allgather(t, g, in.data(), out.data(), c, dtype(), 3);
      for (int r = 0; r < t.size(); ++r)
        for (int64_t i = 0; i < c; ++i) ASSERT_EQ(out[r * c + i], static_cast<T>(value(r, i)));
      // alltoall: block j of rank r holds value(r, j*c + i).
      std::vector<T> blocks = make<T>(t.rank(), c * t.size()), got(c * t.size());
      alltoall(t, g, blocks.data(), got.data(), c, dtype(), 4);
      for (int r = 0; r < t.size(); ++r)
        for (int64_t i = 0; i < c; ++i)
          ASSERT_EQ(got[r * c + i], static_cast<T>(value(r, t.rank() * c + i)));
      const int root = t.size() / 2;
      std::vector<T> b = make<T>(t.rank(), c);
      broadcast(t, g, b.data(), c, dtype(), root, 5);
      for (int64_t i = 0; i < c; ++i) ASSERT_EQ(b[i], static_cast<T>(value(root, i)));
      barrier(t, g, 6);
    });
  });
}

TEST_P(CollectivesTest, PermuteAndShift) {
  typed([&](auto zero) {
    using T = decltype(zero);
    run_in_process(n(), [&](Transport& t) {
      const Group g = Group::all(t.size(), t.rank());
      const int64_t c = count();
      const int m = t.size();
      std::vector<T> in = make<T>(t.rank(), c), out(c);
      shift(t, g, in.data(), out.data(), c, dtype(), 1, true, 7);
      const int from = (t.rank() - 1 + m) % m;
      for (int64_t i = 0; i < c; ++i) ASSERT_EQ(out[i], static_cast<T>(value(from, i)));
      shift(t, g, in.data(), out.data(), c, dtype(), -2, false, 8);
      for (int64_t i = 0; i < c; ++i) {
        const T want = t.rank() + 2 < m ? static_cast<T>(value(t.rank() + 2, i)) : T(0);
        ASSERT_EQ(out[i], want);
      }
      std::vector<int> reverse(m);
      for (int p = 0; p < m; ++p) reverse[p] = m - 1 - p;
      permute(t, g, in.data(), out.data(), c, dtype(), reverse, 9);
      for (int64_t i = 0; i < c; ++i) ASSERT_EQ(out[i], static_cast<T>(value(m - 1 - t.rank(), i)));
    });
  });
}

// halo_exchange: each position's window of rows (any begin and width, past
// the ends too, drifting from position to position as VALID convolutions'
// windows do) holds exactly the rows of the whole dimension, zeros outside.
TEST(HaloExchangeTest, WindowsHoldTheirRowsFromWhoeverHasThem) {
  struct Shape3 {
    int64_t before, after, drift;
  };
  const int64_t outer = 2, inner = 3;
  for (int n : {1, 2, 3, 5, 8}) {
    for (int64_t block : {1, 3}) {
      for (const Shape3& w : std::vector<Shape3>{
               {1, 1, 0}, {0, 2, 0}, {2, 0, 0}, {4, 5, 0}, {0, 0, 1}, {1, 2, -1}, {0, 0, 0}}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << " block " << block << " window -"
                                          << w.before << " +" << w.after << " drift " << w.drift);
        HaloWindows hw;
        hw.whole = block * n;
        hw.block = block;
        hw.extent = block + w.before + w.after;
        for (int p = 0; p < n; ++p) hw.begin.push_back(p * block - w.before + p * w.drift);
        auto value_at = [&](int64_t o, int64_t row, int64_t i) {
          return row < 0 || row >= hw.whole ? 0.f : static_cast<float>(o * 1000 + row * 10 + i);
        };
        run_in_process(n, [&](Transport& t) {
          const int p = t.rank();
          std::vector<float> in(outer * block * inner), out(outer * hw.extent * inner, -1.f);
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t r = 0; r < block; ++r)
              for (int64_t i = 0; i < inner; ++i)
                in[(o * block + r) * inner + i] = value_at(o, p * block + r, i);
          halo_exchange(t, Group::all(n, p), in.data(), out.data(), outer, inner, float32, hw, 3);
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t r = 0; r < hw.extent; ++r)
              for (int64_t i = 0; i < inner; ++i)
                ASSERT_EQ(out[(o * hw.extent + r) * inner + i], value_at(o, hw.begin[p] + r, i))
                    << "rank " << p << " window row " << r;
        });
        // Rows sent: what the other windows take from this position's block.
        for (int p = 0; p < n; ++p) {
          int64_t rows = 0;
          for (int q = 0; q < n; ++q) {
            if (q == p) continue;
            for (int64_t r = hw.begin[q]; r < hw.begin[q] + hw.extent; ++r)
              rows += r >= p * block && r < (p + 1) * block;
          }
          EXPECT_EQ(hw.rows_sent(p), rows) << "position " << p;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gloo, CollectivesTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8, 16, 32),
                                            ::testing::Values(int64_t{0}, int64_t{1}, int64_t{17},
                                                              int64_t{100003}),
                                            ::testing::Values(float32, int32)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_count" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  dtype_name(std::get<2>(info.param));
                         });

// Each allreduce algorithm forced, whatever the size: ring, recursive
// doubling, halving-doubling (with the fold of non-power-of-two groups).
using AlgorithmParam = std::tuple<AllreduceAlgorithm, int, int64_t, DType>;

class AllreduceAlgorithmTest : public ::testing::TestWithParam<AlgorithmParam> {};

std::string algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kAuto:
      return "auto";
    case AllreduceAlgorithm::kRing:
      return "ring";
    case AllreduceAlgorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case AllreduceAlgorithm::kHalvingDoubling:
      return "halving_doubling";
    case AllreduceAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

TEST_P(AllreduceAlgorithmTest, GivesExactAnswersForEveryOp) {
  const auto [algorithm, n, count, dtype] = GetParam();
  expect_exact_allreduce(n, count, dtype, algorithm);
}

INSTANTIATE_TEST_SUITE_P(
    Gloo, AllreduceAlgorithmTest,
    ::testing::Combine(::testing::Values(AllreduceAlgorithm::kRing,
                                         AllreduceAlgorithm::kRecursiveDoubling,
                                         AllreduceAlgorithm::kHalvingDoubling,
                                         AllreduceAlgorithm::kHierarchical),
                       ::testing::Values(1, 2, 3, 4, 5, 8, 13, 32),
                       ::testing::Values(int64_t{0}, int64_t{1}, int64_t{17}, int64_t{100003}),
                       ::testing::Values(float32, int32)),
    [](const auto& info) {
      return algorithm_name(std::get<0>(info.param)) + "_n" +
             std::to_string(std::get<1>(info.param)) + "_count" +
             std::to_string(std::get<2>(info.param)) + "_" + dtype_name(std::get<3>(info.param));
    });

// The one rule that allreduce() and the cost model share.
TEST(AllreduceAlgorithmTest, ChoiceBySizeGroupAndNetwork) {
  using collectives::choose_allreduce_algorithm;
  using collectives::kMidAllreduceBytes;
  using collectives::kSmallAllreduceBytes;
  EXPECT_EQ(choose_allreduce_algorithm(kSmallAllreduceBytes, 8, true),
            AllreduceAlgorithm::kRecursiveDoubling);
  EXPECT_EQ(choose_allreduce_algorithm(kSmallAllreduceBytes + 4, 8, true),
            AllreduceAlgorithm::kHalvingDoubling);
  EXPECT_EQ(choose_allreduce_algorithm(kMidAllreduceBytes, 3, true),
            AllreduceAlgorithm::kHalvingDoubling);
  EXPECT_EQ(choose_allreduce_algorithm(kMidAllreduceBytes + 4, 8, true), AllreduceAlgorithm::kRing);
  EXPECT_EQ(choose_allreduce_algorithm(kSmallAllreduceBytes + 4, 2, true),
            AllreduceAlgorithm::kRing);
  EXPECT_EQ(choose_allreduce_algorithm(kSmallAllreduceBytes + 4, 8, false),
            AllreduceAlgorithm::kRing);
}

TEST(GroupTest, AlongAxesFollowsTheTorusRings) {
  MeshShape m("x:2;y:3;z:4");
  // Processor (1, 2, 3) = 1*12 + 2*4 + 3 = 23.
  Group gy = Group::along_axes(m, 23, {1});
  EXPECT_EQ(gy.ranks, (std::vector<int>{15, 19, 23}));  // y = 0, 1, 2
  EXPECT_EQ(gy.index, 2);
  EXPECT_EQ(gy.rank_at(1), 15);  // wraparound
  Group gz = Group::along_axes(m, 23, {2});
  EXPECT_EQ(gz.ranks, (std::vector<int>{20, 21, 22, 23}));
  Group gxz = Group::along_axes(m, 23, {0, 2});
  EXPECT_EQ(gxz.ranks, (std::vector<int>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(gxz.index, 7);
  EXPECT_THROW(Group::along_axes(m, 23, {3}), ValueError);
  EXPECT_THROW(Group::along_axes(m, 24, {0}), ValueError);
}

TEST(CollectivesMeshTest, AllreduceAlongEachAxisOf2DAnd3DMeshes) {
  for (const char* spec : {"rows:2;cols:3", "x:2;y:2;z:2", "a:4;b:2"}) {
    const MeshShape mesh(spec);
    for (int axis = 0; axis < mesh.ndims(); ++axis) {
      run_in_process(static_cast<int>(mesh.size()), [&](Transport& t) {
        std::vector<float> v = make<float>(t.rank(), 33);
        allreduce(t, Group::along_axes(mesh, t.rank(), {axis}), v.data(), 33, float32,
                  ReduceOp::kSum, 1);
        const Group g = Group::along_axes(mesh, t.rank(), {axis});
        for (int64_t i = 0; i < 33; ++i) {
          int want = 0;
          for (int r : g.ranks) want += value(r, i);
          ASSERT_EQ(v[i], static_cast<float>(want)) << spec << " axis " << axis;
        }
      });
    }
    // All axes, one after another, equals the sum over the whole mesh.
    std::vector<int> axes;
    for (int a = 0; a < mesh.ndims(); ++a) axes.push_back(a);
    run_in_process(
        static_cast<int>(mesh.size()),
        [&](Transport& t) {
          std::vector<int32_t> v = make<int32_t>(t.rank(), 9);
          allreduce_over_axes(t, mesh, t.rank(), axes, v.data(), 9, int32, ReduceOp::kSum, 2);
          for (int64_t i = 0; i < 9; ++i) {
            int want = 0;
            for (int r = 0; r < t.size(); ++r) want += value(r, i);
            ASSERT_EQ(v[i], want);
          }
        },
        RankExecution::kThreads);
  }
}

// Nine axes, one after another: every axis gets a tag of its own (an
// earlier numbering reused the first axis's tag for the ninth).
TEST(CollectivesMeshTest, AllreduceOverNineAxes) {
  const MeshShape mesh("a:2;b:2;c:2;d:2;e:2;f:2;g:2;h:2;i:2");
  std::vector<int> axes;
  for (int a = 0; a < mesh.ndims(); ++a) axes.push_back(a);
  run_in_process(static_cast<int>(mesh.size()), [&](Transport& t) {
    std::vector<int32_t> v = make<int32_t>(t.rank(), 5);
    allreduce_over_axes(t, mesh, t.rank(), axes, v.data(), 5, int32, ReduceOp::kSum, 3);
    for (int64_t i = 0; i < 5; ++i) {
      int want = 0;
      for (int r = 0; r < t.size(); ++r) want += value(r, i);
      ASSERT_EQ(v[i], want);
    }
  });
  std::set<uint64_t> tags;
  for (int a = 0; a < 30; ++a) tags.insert(collectives::axis_tag(3, a));
  EXPECT_EQ(tags.size(), 30u);
}

TEST(CollectivesMeshTest, FloatAllreduceIsBitwiseRepeatableAndEqualOnAllRanks) {
  auto once = [](std::vector<std::vector<float>>* results) {
    results->assign(8, {});
    run_in_process(
        8,
        [&](Transport& t) {
          std::mt19937 rng(static_cast<uint32_t>(t.rank()));
          std::uniform_real_distribution<float> d(-1.f, 1.f);
          std::vector<float> v(1001);
          for (auto& x : v) x = d(rng);
          allreduce(t, Group::all(t.size(), t.rank()), v.data(), 1001, float32, ReduceOp::kSum, 1);
          (*results)[t.rank()] = v;
        },
        RankExecution::kThreads);
  };
  std::vector<std::vector<float>> a, b;
  once(&a);
  once(&b);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(std::memcmp(a[r].data(), a[0].data(), 1001 * sizeof(float)), 0) << "rank " << r;
    EXPECT_EQ(std::memcmp(a[r].data(), b[r].data(), 1001 * sizeof(float)), 0) << "rank " << r;
  }
}

// A transport whose collectives cut chunks into segments of `segment` bytes
// (0: whole chunks) and see a flat network or not (halving-doubling or the
// ring for mid-size allreduces); everything else goes to `inner`.
class SegmentingTransport : public Transport {
 public:
  SegmentingTransport(Transport& inner, size_t segment, bool flat)
      : in_(inner), seg_(segment), flat_(flat) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    in_.send(peer, tag, data, bytes);
  }
  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    in_.recv(peer, tag, data, bytes);
  }
  void exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs) override {
    in_.exchange(sends, recvs);
  }
  void begin_collective(CollectiveCall call) override { in_.begin_collective(std::move(call)); }
  size_t ring_segment_bytes() const override { return seg_; }
  bool flat_network() const override { return flat_; }

 private:
  Transport& in_;
  size_t seg_;
  bool flat_;
};

// Segments change how a chunk travels, never the result (ring and
// halving-doubling alike): exact answers for odd sizes and segment sizes
// that do not divide the chunks, float sums equal on every rank and equal
// to the bit with and without segments.
TEST(CollectivesMeshTest, RingSegmentsNeverChangeResults) {
  const int64_t count = 20011;  // over 64 KiB: ring or halving-doubling; odd
  std::vector<std::vector<float>> whole;
  for (int n : {2, 3, 5, 8}) {
    for (bool flat : {false, true}) {
      for (size_t seg : {size_t{0}, size_t{28}, size_t{4096}, size_t{65537}}) {
        std::vector<std::vector<float>> sums(n);
        run_in_process(n, [&](Transport& inner) {
          SegmentingTransport t(inner, seg, flat);
          const Group g = Group::all(t.size(), t.rank());
          std::vector<int32_t> v = make<int32_t>(t.rank(), count);
          allreduce(t, g, v.data(), count, int32, ReduceOp::kMax, 1);
          for (int64_t i = 0; i < count; i += 97) {
            int want = value(0, i);
            for (int r = 1; r < n; ++r) want = std::max(want, value(r, i));
            ASSERT_EQ(v[i], want) << "n " << n << " flat " << flat << " segment " << seg
                                  << " element " << i;
          }
          std::mt19937 rng(static_cast<uint32_t>(t.rank()));
          std::uniform_real_distribution<float> d(-1.f, 1.f);
          std::vector<float> f(count);
          for (auto& x : f) x = d(rng);
          allreduce(t, g, f.data(), count, float32, ReduceOp::kSum, 2);
          sums[t.rank()] = f;
          const int64_t block = 3001;
          std::vector<float> in = make<float>(t.rank(), block * n), out(block), all(block * n);
          reduce_scatter(t, g, in.data(), out.data(), block, float32, ReduceOp::kSum, 3);
          for (int64_t i = 0; i < block; ++i) {
            int want = 0;
            for (int r = 0; r < n; ++r) want += value(r, t.rank() * block + i);
            ASSERT_EQ(out[i], static_cast<float>(want)) << "n " << n << " segment " << seg;
          }
          allgather(t, g, out.data(), all.data(), block, float32, 4);
          for (int r = 0; r < n; ++r) {
            int want = 0;
            for (int q = 0; q < n; ++q) want += value(q, r * block);
            ASSERT_EQ(all[r * block], static_cast<float>(want)) << "n " << n << " segment " << seg;
          }
        });
        if (seg == 0) whole = sums;
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(std::memcmp(sums[r].data(), sums[0].data(), count * sizeof(float)), 0)
              << "n " << n << " flat " << flat << " segment " << seg << ": rank " << r
              << " differs from rank 0";
          ASSERT_EQ(std::memcmp(sums[r].data(), whole[r].data(), count * sizeof(float)), 0)
              << "n " << n << " segment " << seg << " rank " << r;
        }
      }
    }
  }
}

// (Threads: ASan cannot follow exceptions unwinding fiber stacks.)
// bfloat16 travels as 2 bytes an element and each sum is formed in float32
// and rounded once: 1 + 3 * 2^-8 is 1.5 bfloat16 ulps above 1, a tie that
// rounds to even (1 + 2^-6), on every rank.
TEST(CollectivesMeshTest, BFloat16SumsRoundOncePerStep) {
  for (int n : {2, 3}) {
    auto run = [n](Transport& t) {
      std::vector<uint16_t> v(5, t.rank() == 0 ? float_to_bfloat16_bits(1.0f)
                                               : float_to_bfloat16_bits(0.01171875f / (n - 1)));
      allreduce(t, Group::all(n, t.rank()), v.data(), 5, bfloat16, ReduceOp::kSum, 1);
      for (uint16_t b : v) EXPECT_EQ(bfloat16_bits_to_float(b), 1.015625f) << n;
    };
    run_in_process(n, run, RankExecution::kThreads);
  }
}

TEST(CollectivesMeshTest, MisuseIsAClearError) {
  const auto threads = RankExecution::kThreads;
  auto wrong_position = [](Transport& t) {
    Group g = Group::all(2, 1 - t.rank());
    float v = 0;
    allreduce(t, g, &v, 1, float32, ReduceOp::kSum, 1);
  };
  EXPECT_THROW(run_in_process(2, wrong_position, threads), ValueError);
  // Ranks that disagree on the size: an error, not garbage or a hang.
  auto disagree = [](Transport& t) {
    std::vector<float> v(t.rank() == 0 ? 10 : 12);
    allreduce(t, Group::all(2, t.rank()), v.data(), static_cast<int64_t>(v.size()), float32,
              ReduceOp::kSum, 1);
  };
  EXPECT_THROW(run_in_process(2, disagree, threads, std::chrono::milliseconds(2000)), ValueError);
  // A group that names a rank twice or one outside the job, small (checked
  // pair by pair) or large (checked against a table of the job's ranks).
  for (const int n : {3, 40}) {
    for (const int bad : {1, -1, n}) {
      auto malformed = [&](Transport& t) {
        Group g;
        for (int r = 0; r < n; ++r) g.ranks.push_back(r);
        g.ranks[n - 1] = bad;  // the caller, rank 0, stays at position 0
        g.index = 0;
        float v = 0;
        if (t.rank() == 0) allreduce(t, g, &v, 1, float32, ReduceOp::kSum, 1);
      };
      testing::expect_error<ValueError>(
          [&] { run_in_process(n, malformed, threads, std::chrono::milliseconds(2000)); },
          {"is repeated or outside the job"});
    }
  }
}

}  // namespace
}  // namespace mtf
