// The in-process transport, as fibers, threads and a pool: ordering, tags, size
// checks, timeouts and lost peers end in clear errors, never hangs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "exchange_scenario.h"
#include "expect_error.h"
#include "mtf/errors.h"
#include "mtf/in_process_transport.h"
#include "test_util.h"

namespace mtf {
namespace {

using std::chrono::milliseconds;

// Fibers: see testing::kAddressSanitizer. The Threads variant runs the same
// transport code under ASan.
#define SKIP_FIBER_EXCEPTIONS_UNDER_ASAN()                                               \
  if (testing::kAddressSanitizer && GetParam() != RankExecution::kThreads)               \
  GTEST_SKIP() << "exceptions on fiber stacks confuse ASan; the Threads variant covers " \
                  "this path"

class TransportTest : public ::testing::TestWithParam<RankExecution> {};

TEST_P(TransportTest, PingPongKeepsOrderPerPeerAndTag) {
  run_in_process(
      3,
      [](Transport& t) {
        const int next = (t.rank() + 1) % t.size(), prev = (t.rank() + 2) % t.size();
        for (int i = 0; i < 50; ++i) {
          const int v = t.rank() * 1000 + i;
          t.send(next, 7, &v, sizeof v);
        }
        const int w = -t.rank();
        t.send(next, 9, &w, sizeof w);
        // Tag 9 can be taken before tag 7's backlog.
        int got = 0;
        t.recv(prev, 9, &got, sizeof got);
        EXPECT_EQ(got, -prev);
        for (int i = 0; i < 50; ++i) {
          t.recv(prev, 7, &got, sizeof got);
          EXPECT_EQ(got, prev * 1000 + i);
        }
      },
      GetParam());
}

TEST_P(TransportTest, ZeroByteAndLargeMessages) {
  run_in_process(
      2,
      [](Transport& t) {
        const int peer = 1 - t.rank();
        std::vector<float> big(1 << 20, static_cast<float>(t.rank() + 1));
        t.send(peer, 1, nullptr, 0);
        t.send(peer, 2, big.data(), big.size() * sizeof(float));
        t.recv(peer, 1, nullptr, 0);
        std::vector<float> in(big.size());
        t.recv(peer, 2, in.data(), in.size() * sizeof(float));
        EXPECT_EQ(in.front(), static_cast<float>(peer + 1));
        EXPECT_EQ(in.back(), static_cast<float>(peer + 1));
      },
      GetParam());
}

TEST_P(TransportTest, SizeMismatchIsAnError) {
  SKIP_FIBER_EXCEPTIONS_UNDER_ASAN();
  testing::expect_error<ValueError>(
      [&] {
        run_in_process(
            2,
            [](Transport& t) {
              if (t.rank() == 0) {
                int v[2] = {1, 2};
                t.send(1, 3, v, sizeof v);
              } else {
                int v = 0;
                t.recv(0, 3, &v, sizeof v);
              }
            },
            GetParam(), milliseconds(2000));
      },
      {"expected 4 bytes from rank 0 (tag 3)", "has 8 bytes"});
}

TEST_P(TransportTest, APeerThatNeverAnswersTimesOut) {
  SKIP_FIBER_EXCEPTIONS_UNDER_ASAN();
  const auto start = std::chrono::steady_clock::now();
  testing::expect_error<TimeoutError>(
      [&] {
        run_in_process(
            2,
            [](Transport& t) {
              if (t.rank() == 0) {
                int v = 0;
                t.recv(1, 42, &v, sizeof v);  // rank 1 never sends
              }
            },
            GetParam(), milliseconds(300));
      },
      {"rank 0 timed out", "from rank 1 (tag 42"});
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(secs, 0.25);
  EXPECT_LT(secs, 5.0);
}

TEST_P(TransportTest, AFailingRankIsReportedAndItsPeersStopQuickly) {
  SKIP_FIBER_EXCEPTIONS_UNDER_ASAN();
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> lost{0};
  try {
    run_in_process(
        4,
        [&](Transport& t) {
          if (t.rank() == 2) throw ValueError("rank 2 had bad input");
          int v = 0;
          try {
            t.recv(2, 1, &v, sizeof v);  // would wait 30 s without the failure detection
          } catch (const PeerLostError& e) {
            ++lost;
            EXPECT_NE(std::string(e.what()).find("rank 2 is lost"), std::string::npos) << e.what();
            throw;
          }
        },
        GetParam(), milliseconds(30000));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "rank 2 had bad input");  // the cause, not the consequences
  }
  EXPECT_EQ(lost.load(), 3);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST_P(TransportTest, InvalidPeersAreRejected) {
  SKIP_FIBER_EXCEPTIONS_UNDER_ASAN();
  run_in_process(
      2,
      [](Transport& t) {
        int v = 0;
        EXPECT_THROW(t.send(t.rank(), 0, &v, sizeof v), ValueError);
        EXPECT_THROW(t.send(5, 0, &v, sizeof v), ValueError);
        EXPECT_THROW(t.recv(-1, 0, &v, sizeof v), ValueError);
      },
      GetParam());
}

// exchange() posts its receives first: a peer's send then copies straight
// into them (tests/exchange_scenario.h).
TEST_P(TransportTest, ExchangeMatchesMessagesInOrderWhereverTheyArrive) {
  run_in_process(
      3, [](Transport& t) { testing::exchange_scenario(t, 20, 100000); }, GetParam());
}

TEST_P(TransportTest, ExchangeNamesASizeMismatchAndALostPeer) {
  SKIP_FIBER_EXCEPTIONS_UNDER_ASAN();
  testing::expect_error<ValueError>(
      [&] {
        run_in_process(
            2,
            [](Transport& t) {
              std::vector<char> buf(64);
              if (t.rank() == 0) {
                t.exchange({}, {{1, 2, buf.data(), 32}});
              } else {
                t.exchange({{0, 2, buf.data(), 64}}, {});
              }
            },
            GetParam(), milliseconds(5000));
      },
      {"expected 32 bytes from rank 1 (tag 2)"});
  auto world = InProcessWorld::create(2, GetParam());
  auto t0 = world->transport(0);
  t0->set_timeout(milliseconds(5000));
  world->kill(1);
  std::vector<char> buf(8);
  testing::expect_error<PeerLostError>(
      [&] {
        t0->exchange({}, {{1, 1, buf.data(), 8}});
      },
      {"rank 1 is lost"});
}

INSTANTIATE_TEST_SUITE_P(Execution, TransportTest,
                         ::testing::Values(RankExecution::kFibers, RankExecution::kThreads,
                                           RankExecution::kPool),
                         [](const auto& info) { return rank_execution_name(info.param); });

TEST(RankExecutionTest, PoolSpreadsRanksOverOneThreadPerCpuInBlocks) {
  EXPECT_EQ(rank_threads(8, RankExecution::kFibers), 1);
  EXPECT_EQ(rank_threads(8, RankExecution::kThreads), 8);
  const int w = rank_threads(64, RankExecution::kPool);
  EXPECT_GE(w, 1);
  EXPECT_EQ(rank_threads(1, RankExecution::kPool), 1);
  EXPECT_EQ(rank_threads(w + 3, RankExecution::kPool), w);
  // Ranks of one block share a thread; blocks are on distinct threads.
  const int n = 2 * w + 1;
  std::vector<std::thread::id> ids(n);
  run_in_process(
      n, [&](Transport& t) { ids[t.rank()] = std::this_thread::get_id(); }, RankExecution::kPool);
  std::set<std::thread::id> distinct(ids.begin(), ids.end());
  EXPECT_EQ(static_cast<int>(distinct.size()), w);
  for (int t = 0; t < w; ++t)
    for (int r = t * n / w; r < (t + 1) * n / w; ++r) EXPECT_EQ(ids[r], ids[t * n / w]);
}

// The pool's threads outlive a run: the next run's blocks run on the same
// threads. Runs from two threads at once both complete (one on threads of
// its own), and so does a run in a child made by fork().
TEST(RankExecutionTest, PoolThreadsAreKeptForTheNextRunAndSharedSafely) {
  const int w = rank_threads(64, RankExecution::kPool);
  auto thread_ids = [&] {
    std::vector<std::thread::id> ids(w);
    run_in_process(
        w, [&](Transport& t) { ids[t.rank()] = std::this_thread::get_id(); }, RankExecution::kPool);
    return std::set<std::thread::id>(ids.begin(), ids.end());
  };
  const auto first = thread_ids();
  EXPECT_EQ(thread_ids(), first);
  EXPECT_EQ(first.count(std::this_thread::get_id()), 0u);  // the caller only waits

  // Two meshes at once, each allreducing over its ranks.
  std::atomic<int> sums_ok{0};
  auto mesh = [&] {
    for (int run = 0; run < 20; ++run) {
      run_in_process(
          4,
          [&](Transport& t) {
            int64_t v = t.rank() + 1, total = 0;
            for (int p = 0; p < t.size(); ++p) {
              if (p == t.rank()) continue;
              t.send(p, 7, &v, sizeof v);
            }
            total = v;
            for (int p = 0; p < t.size(); ++p) {
              if (p == t.rank()) continue;
              int64_t got = 0;
              t.recv(p, 7, &got, sizeof got);
              total += got;
            }
            if (total == 10) ++sums_ok;
          },
          RankExecution::kPool);
    }
  };
  std::thread other(mesh);
  mesh();
  other.join();
  EXPECT_EQ(sums_ok.load(), 2 * 20 * 4);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> ran{0};
    run_in_process(
        w, [&](Transport&) { ++ran; }, RankExecution::kPool);
    _exit(ran.load() == w ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(RankExecutionTest, NamesParseAndBadNamesSayTheChoices) {
  for (RankExecution e : {RankExecution::kFibers, RankExecution::kThreads, RankExecution::kPool})
    EXPECT_EQ(parse_rank_execution(rank_execution_name(e)), e);
  try {
    parse_rank_execution("gpu");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    for (const char* word : {"\"gpu\"", "fibers", "threads", "pool"})
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

TEST(InProcessWorldTest, DelayedDeliveryAndKill) {
  auto world = InProcessWorld::create(2);
  auto a = world->transport(0), b = world->transport(1);
  world->set_delay(std::chrono::microseconds(50000));
  const auto start = std::chrono::steady_clock::now();
  int v = 5, got = 0;
  a->send(1, 0, &v, sizeof v);
  b->recv(0, 0, &got, sizeof got);
  EXPECT_EQ(got, 5);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(45));
  world->set_delay(std::chrono::microseconds(0));
  world->kill(0);
  EXPECT_THROW(b->recv(0, 0, &got, sizeof got), PeerLostError);
  EXPECT_THROW(b->send(0, 0, &v, sizeof v), PeerLostError);
  EXPECT_THROW(world->transport(2), ValueError);
}

TEST(StoreTest, SetGetAddAcrossRanks) {
  auto world = InProcessWorld::create(3);
  Store& store = world->store();
  run_in_process(3, [&](Transport& t) {
    store.set("addr/" + std::to_string(t.rank()), {static_cast<uint8_t>(t.rank())});
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(store.get("addr/" + std::to_string(r), milliseconds(5000)),
                (std::vector<uint8_t>{static_cast<uint8_t>(r)}));
    store.add("count", 1);
  });
  EXPECT_EQ(store.add("count", 0), 3);
  testing::expect_error<TimeoutError>([&] { store.get("never", milliseconds(50)); }, {"\"never\""});
}

}  // namespace
}  // namespace mtf
