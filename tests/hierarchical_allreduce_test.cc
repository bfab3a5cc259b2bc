// Hierarchical allreduce (collectives/allreduce_hierarchical.cc): ranks as
// threads of an in-process job, told they sit on machines by a wrapper
// transport that also counts the bytes crossing between machines. kAuto
// goes hierarchical exactly when a group spans machines with two or more
// ranks on one; answers are exact, every rank gets the same bits, and
// fewer bytes cross machines than the flat ring sends.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>

#include "collectives/allreduce_algorithms.h"
#include "mtf/collectives.h"
#include "mtf/in_process_transport.h"

namespace mtf {
namespace {

// `inner`, on the machines `machines` names, counting payload bytes sent
// from one machine to another into `*crossing`.
class OnMachines : public Transport {
 public:
  OnMachines(Transport& inner, std::vector<int> machines, std::atomic<int64_t>* crossing)
      : inner_(inner), machines_(std::move(machines)), crossing_(crossing) {
    set_timeout(inner.timeout());
  }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    count(peer, bytes);
    inner_.send(peer, tag, data, bytes);
  }
  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    inner_.recv(peer, tag, data, bytes);
  }
  void exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs) override {
    for (const SendSpec& s : sends) count(s.peer, s.bytes);
    inner_.exchange(sends, recvs);
  }
  size_t ring_segment_bytes() const override { return inner_.ring_segment_bytes(); }
  std::vector<int> machines() const override { return machines_; }
  void begin_collective(CollectiveCall call) override { inner_.begin_collective(call); }

 private:
  void count(int peer, size_t bytes) {
    if (machines_[static_cast<size_t>(peer)] != machines_[static_cast<size_t>(rank())])
      *crossing_ += static_cast<int64_t>(bytes);
  }
  Transport& inner_;
  std::vector<int> machines_;
  std::atomic<int64_t>* crossing_;
};

// Runs body on one rank per machines entry; returns the bytes that crossed.
int64_t run_on_machines(const std::vector<int>& machines,
                        const std::function<void(Transport&)>& body) {
  std::atomic<int64_t> crossing{0};
  run_in_process(static_cast<int>(machines.size()), [&](Transport& inner) {
    OnMachines t(inner, machines, &crossing);
    body(t);
  });
  return crossing.load();
}

int value(int rank, int64_t i) { return static_cast<int>((rank * 7 + i * 13) % 101) - 50; }

struct MachinesCase {
  const char* name;
  std::vector<int> machines;
  bool hierarchical;  // whether kAuto goes hierarchical over all ranks
};

const std::vector<MachinesCase> kCases = {
    {"two_machines_of_4", {0, 0, 0, 0, 4, 4, 4, 4}, true},
    {"three_machines_of_2", {0, 0, 2, 2, 4, 4}, true},
    {"interleaved", {0, 1, 0, 1, 0, 1}, true},
    {"unequal_2_3_1", {0, 0, 2, 2, 2, 5}, true},
    {"unequal_3_1", {0, 0, 0, 3}, true},
    {"one_per_machine", {0, 1, 2, 3}, false},
    {"one_machine", {0, 0, 0, 0}, false},
};

TEST(HierarchicalAllreduce, ChosenWhenAGroupSpansMachinesWithSeveralRanksOnOne) {
  for (const MachinesCase& c : kCases) {
    std::atomic<int> chosen{0};
    run_on_machines(c.machines, [&](Transport& t) {
      chosen += collectives::spans_machines(t, Group::all(t.size(), t.rank()));
    });
    EXPECT_EQ(chosen.load(), c.hierarchical ? static_cast<int>(c.machines.size()) : 0) << c.name;
  }
}

TEST(HierarchicalAllreduce, ExactForEveryOpAndSize) {
  for (const MachinesCase& c : kCases) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}, int64_t{100003}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
        SCOPED_TRACE(testing::Message()
                     << c.name << " count " << count << " op " << static_cast<int>(op));
        run_on_machines(c.machines, [&](Transport& t) {
          std::vector<int32_t> v(static_cast<size_t>(count));
          std::vector<float> f(static_cast<size_t>(count));
          for (int64_t i = 0; i < count; ++i) {
            v[static_cast<size_t>(i)] = value(t.rank(), i);
            f[static_cast<size_t>(i)] = static_cast<float>(value(t.rank(), i));
          }
          const Group g = Group::all(t.size(), t.rank());
          allreduce(t, g, v.data(), count, int32, op, 3);
          allreduce(t, g, f.data(), count, float32, op, 4);
          for (int64_t i = 0; i < count; ++i) {
            int want = value(0, i);
            for (int r = 1; r < t.size(); ++r) {
              const int x = value(r, i);
              want = op == ReduceOp::kSum   ? want + x
                     : op == ReduceOp::kMax ? std::max(want, x)
                                            : std::min(want, x);
            }
            ASSERT_EQ(v[static_cast<size_t>(i)], want) << "rank " << t.rank() << " element " << i;
            ASSERT_EQ(f[static_cast<size_t>(i)], static_cast<float>(want))
                << "rank " << t.rank() << " element " << i;
          }
        });
      }
    }
  }
}

// Sums of arbitrary floats round by the order of additions: whatever it is,
// every rank must end with the same bits, close to the exact sum.
TEST(HierarchicalAllreduce, EveryRankGetsTheSameBits) {
  for (const MachinesCase& c : kCases) {
    const int n = static_cast<int>(c.machines.size());
    const int64_t count = 70001;
    std::vector<std::vector<float>> got(static_cast<size_t>(n));
    std::vector<std::vector<float>> inputs(static_cast<size_t>(n));
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    for (auto& in : inputs) {
      in.resize(count);
      for (float& x : in) x = normal(rng);
    }
    run_on_machines(c.machines, [&](Transport& t) {
      std::vector<float> x = inputs[static_cast<size_t>(t.rank())];
      allreduce(t, Group::all(n, t.rank()), x.data(), count, float32, ReduceOp::kSum, 9);
      got[static_cast<size_t>(t.rank())] = x;
    });
    for (int r = 1; r < n; ++r)
      ASSERT_EQ(std::memcmp(got[0].data(), got[static_cast<size_t>(r)].data(), count * 4), 0)
          << c.name << ": rank " << r << " differs from rank 0";
    for (int64_t i = 0; i < count; i += 997) {
      double exact = 0;
      for (const auto& in : inputs) exact += in[static_cast<size_t>(i)];
      EXPECT_NEAR(got[0][static_cast<size_t>(i)], exact, 1e-5 * n) << c.name << " element " << i;
    }
  }
}

// Between two machines of 4 ranks, a buffer of N bytes: hierarchical sends
// each rank's quarter across once each way (2N in all); the flat ring over
// ranks 0..7 crosses between the machines on 4 directed links, 7/4 of half
// the buffer each (3.5N).
TEST(HierarchicalAllreduce, FewerBytesCrossMachinesThanTheFlatRing) {
  const std::vector<int> machines = {0, 0, 0, 0, 4, 4, 4, 4};
  const int64_t count = 1 << 20;  // 4 MiB of float32
  const int64_t bytes = count * 4;
  auto crossing = [&](AllreduceAlgorithm a) {
    return run_on_machines(machines, [&](Transport& t) {
      std::vector<float> x(count, 1.f);
      allreduce(t, Group::all(t.size(), t.rank()), x.data(), count, float32, ReduceOp::kSum, 2, a);
      ASSERT_EQ(x[0], 8.f);
      ASSERT_EQ(x[count - 1], 8.f);
    });
  };
  const int64_t hierarchical = crossing(AllreduceAlgorithm::kAuto);
  const int64_t ring = crossing(AllreduceAlgorithm::kRing);
  EXPECT_EQ(hierarchical, 2 * bytes);
  EXPECT_EQ(ring, 7 * bytes / 2);
  // Subgroups that stay on one machine, or hold one rank per machine, are flat.
  const int64_t within = run_on_machines(machines, [&](Transport& t) {
    std::vector<float> x(1000, 1.f);
    const MeshShape mesh("m:2;k:4");
    allreduce(t, Group::along_axes(mesh, t.rank(), {1}), x.data(), 1000, float32, ReduceOp::kSum,
              5);
    ASSERT_EQ(x[999], 4.f);
  });
  EXPECT_EQ(within, 0);
}

}  // namespace
}  // namespace mtf
