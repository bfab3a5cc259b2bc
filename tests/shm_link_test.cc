// Shared-memory links under the TCP transport (transport/shm_link.h), with
// ranks as threads of this process (one machine): links form between every
// pair unless a rank declines (MTF_SHM=0 on either side keeps the pair on
// TCP, and both sides agree), data written just before a rank's normal exit
// still arrives, and a rank that ends while its peer waits is named. The
// transport contract runs over these links too (transport_contract_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "mtf/collectives.h"
#include "tcp_world.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::tcp_options;

// Runs body on n ranks whose shared_memory option is wants[r], with rings
// of ring_bytes.
std::vector<std::string> run_with(const std::vector<bool>& wants,
                                  const std::function<void(Transport&)>& body,
                                  size_t ring_bytes = 1u << 20) {
  const int n = static_cast<int>(wants.size());
  const int port = testing::free_port();
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpOptions o = tcp_options(r, n, port, std::chrono::seconds(10), wants[r]);
        o.shm_ring_bytes = ring_bytes;
        auto t = connect_tcp(o);
        body(*t);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// An allreduce that checks its exact answer (integers in float32).
void check_allreduce(Transport& t) {
  const Group g = Group::all(t.size(), t.rank());
  std::vector<float> x(300000, static_cast<float>(t.rank() + 1));
  allreduce(t, g, x.data(), static_cast<int64_t>(x.size()), float32, ReduceOp::kSum, 5);
  const float want = static_cast<float>(t.size() * (t.size() + 1) / 2);
  for (float v : x) ASSERT_EQ(v, want);
}

TEST(ShmLink, RanksOfOneMachineLinkUnlessEitherDeclines) {
  std::vector<std::string> links(3);
  std::vector<std::vector<int>> machines(3);
  auto errors = run_with({true, true, true}, [&](Transport& t) {
    links[t.rank()] = t.describe_links();
    machines[t.rank()] = t.machines();
    check_allreduce(t);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(links[r], "shared memory with 2 ranks on this machine") << "rank " << r;
    EXPECT_EQ(machines[r], (std::vector<int>{0, 0, 0})) << "rank " << r;
  }

  // Rank 2 declines: it talks TCP with both, and ranks 0 and 1 still share
  // memory with each other.
  errors = run_with({true, true, false}, [&](Transport& t) {
    links[t.rank()] = t.describe_links();
    machines[t.rank()] = t.machines();
    check_allreduce(t);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    // Declining shared memory does not move a rank to another machine.
    EXPECT_EQ(machines[r], (std::vector<int>{0, 0, 0})) << "rank " << r;
  }
  EXPECT_EQ(links[0], "shared memory with 1 rank on this machine, TCP with 1 other");
  EXPECT_EQ(links[1], "shared memory with 1 rank on this machine, TCP with 1 other");
  EXPECT_EQ(links[2], "");
}

// Rank 1 writes a message and its goodbye into its ring and exits (its
// socket closes) while rank 0 waits for rank 2: rank 0 sees the closed
// socket first, and must read the ring before judging the exit a crash.
TEST(ShmLink, WhatARankSendsBeforeItsExitArrives) {
  std::atomic<bool> gone{false};
  const auto errors = run_with({true, true, true}, [&](Transport& t) {
    std::vector<int32_t> v(1000);
    if (t.rank() == 1) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
      t.send(0, 9, v.data(), 4000);  // fits the ring: send returns at once
      gone = true;                   // and the transport is destroyed on return
    } else if (t.rank() == 2) {
      while (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int32_t x = 7;
      t.send(0, 1, &x, sizeof(x));
    } else {
      int32_t x = 0;
      t.recv(2, 1, &x, sizeof(x));  // meanwhile rank 1 leaves
      ASSERT_EQ(x, 7);
      t.recv(1, 9, v.data(), 4000);
      for (int i = 0; i < 1000; ++i) ASSERT_EQ(v[i], i);
    }
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// Rings far smaller than the messages: every message waits for space, the
// reader frees it a few KiB at a time (it tells the writer about freed
// space only now and then), and one side sleeps between messages so the
// other's writes find the ring full and wait asleep. Nothing is lost,
// reordered or stuck, and no wake-up is lost: a lost one still ends at the
// poll's 100 ms cap, so the run's length tells (~0.1 s; ~27 s when freed
// space did not wake the writer).
TEST(ShmLink, MessagesLargerThanTheRingFlowBothWaysAndWakeTheWriter) {
  const auto start = std::chrono::steady_clock::now();
  const auto errors = run_with(
      {true, true},
      [&](Transport& t) {
        const int peer = 1 - t.rank();
        for (int round = 0; round < 40; ++round) {
          const size_t n = 1 + static_cast<size_t>(round) * 997 % 20000;
          std::vector<int32_t> out(n), in(n, -1);
          for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(i * 7 + round + t.rank());
          if (round % 3 == 2 && t.rank() == 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          if (round % 2 == 0) {
            t.exchange({SendSpec{peer, 4, out.data(), n * 4}},
                       {RecvSpec{peer, 4, in.data(), n * 4}});
          } else if (t.rank() == 0) {  // one way, then back
            t.send(peer, 6, out.data(), n * 4);
            t.recv(peer, 7, in.data(), n * 4);
          } else {
            t.recv(peer, 6, in.data(), n * 4);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            t.send(peer, 7, out.data(), n * 4);
          }
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(in[i], static_cast<int32_t>(i * 7 + round + peer)) << "round " << round;
        }
      },
      4096);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8))
      << "writers waited for the poll's timeout instead of being woken";
}

TEST(ShmLink, ARankThatEndsWhileItsPeerWaitsIsNamed) {
  const auto errors = run_with({true, true}, [&](Transport& t) {
    if (t.rank() == 0) {
      int32_t v;
      t.recv(1, 3, &v, sizeof(v));  // rank 1 never sends tag 3
    }
  });
  EXPECT_NE(errors[0].find("rank 1 finished its program"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace mtf
