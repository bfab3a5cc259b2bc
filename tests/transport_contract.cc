#include "transport_contract.h"

#include <chrono>
#include <cstring>

#include "exchange_scenario.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf::testing {
namespace {

int next_of(const Transport& t) { return (t.rank() + 1) % t.size(); }
int prev_of(const Transport& t) { return (t.rank() + t.size() - 1) % t.size(); }

// A gtest failure inside run() is recorded where it happens; the outcome
// only carries errors thrown.
void expect_success(int rank, int, const std::string& outcome) {
  EXPECT_EQ(outcome, "") << "rank " << rank;
}

void expect_contains(const std::string& outcome, const std::string& what, int rank) {
  EXPECT_NE(outcome.find(what), std::string::npos)
      << "rank " << rank << " should have failed with \"" << what << "\" but: " << outcome;
}

std::vector<ContractCase> make_cases() {
  std::vector<ContractCase> cases;

  // Order is kept per (peer, tag); a later tag can be taken first; empty
  // messages are messages.
  cases.push_back({"OrderPerPeerAndTag",
                   [](Transport& t) {
                     return outcome_of([&] {
                       for (int i = 0; i < 50; ++i) {
                         const int32_t v = t.rank() * 1000 + i;
                         t.send(next_of(t), 100 + i % 2, &v, sizeof v);
                       }
                       for (int tag : {1, 0}) {
                         for (int i = tag; i < 50; i += 2) {
                           int32_t v = -1;
                           t.recv(prev_of(t), 100 + tag, &v, sizeof v);
                           ASSERT_EQ(v, prev_of(t) * 1000 + i);
                         }
                       }
                       t.send(next_of(t), 109, nullptr, 0);
                       t.recv(prev_of(t), 109, nullptr, 0);
                     });
                   },
                   expect_success});

  // Every rank sends 64 MiB before anyone receives: send() never waits
  // for the receiver, so this cannot deadlock.
  cases.push_back({"LargeMessagesAllAtOnce",
                   [](Transport& t) {
                     return outcome_of([&] {
                       const size_t n = size_t{16} << 20;
                       std::vector<float> out(n, static_cast<float>(t.rank() + 1)), in(n);
                       t.send(next_of(t), 200, out.data(), n * sizeof(float));
                       t.recv(prev_of(t), 200, in.data(), n * sizeof(float));
                       for (size_t i = 0; i < n; i += 4099)
                         ASSERT_EQ(in[i], static_cast<float>(prev_of(t) + 1));
                       ASSERT_EQ(in.back(), static_cast<float>(prev_of(t) + 1));
                     });
                   },
                   expect_success});

  // exchange(): receives may be posted first; every payload arrives
  // intact and in order wherever it lands (exchange_scenario.h).
  cases.push_back(
      {"ExchangeMatchesMessagesWhereverTheyArrive",
       [](Transport& t) { return outcome_of([&] { exchange_scenario(t, 3, 3 << 20); }); },
       expect_success});

  // A receive of the wrong size names both ranks and the tag, by recv()
  // and by exchange().
  cases.push_back(
      {"SizeMismatchIsNamed",
       [](Transport& t) {
         std::vector<char> buf(4096, 'x');
         if (t.rank() == 0) {
           return outcome_of([&] {
             t.send(1, 301, buf.data(), 8);
             t.exchange({{1, 302, buf.data(), buf.size()}}, {});
           });
         }
         if (t.rank() != 1) return std::string();
         std::string a = outcome_of([&] { t.recv(0, 301, buf.data(), 4); });
         std::string b = outcome_of([&] {
           t.exchange({}, {{0, 302, buf.data(), buf.size() / 2}});
         });
         return a + " | " + b;
       },
       [](int rank, int, const std::string& outcome) {
         if (rank != 1) return expect_success(rank, 0, outcome);
         expect_contains(outcome, "ValueError: rank 1 expected 4 bytes from rank 0 (tag 301)",
                         rank);
         expect_contains(outcome, "| ValueError: rank 1 expected 2048 bytes from rank 0 (tag 302)",
                         rank);
       }});

  // Peers outside the job, or oneself, are ValueErrors.
  cases.push_back({"InvalidPeersAreRejected",
                   [](Transport& t) {
                     int v = 0;
                     return outcome_of([&] { t.send(t.rank(), 400, &v, sizeof v); }) + " | " +
                            outcome_of([&] { t.send(t.size() + 3, 400, &v, sizeof v); }) + " | " +
                            outcome_of([&] { t.recv(-1, 400, &v, sizeof v); });
                   },
                   [](int rank, int, const std::string& outcome) {
                     int parts = 0;
                     for (size_t begin = 0;; ++parts) {
                       const size_t end = outcome.find(" | ", begin);
                       EXPECT_EQ(outcome.compare(begin, 12, "ValueError: "), 0)
                           << "rank " << rank << ": " << outcome;
                       if (end == std::string::npos) break;
                       begin = end + 3;
                     }
                     EXPECT_EQ(parts + 1, 3) << outcome;
                   }});

  // A receive from a peer that sends nothing ends at its deadline with a
  // TimeoutError naming the peer; the transport works on afterwards.
  cases.push_back(
      {"ASilentPeerTimesOut",
       [](Transport& t) {
         if (t.rank() == 0) {
           const auto saved = t.timeout();
           t.set_timeout(std::chrono::milliseconds(300));
           int v = 0;
           const auto start = std::chrono::steady_clock::now();
           std::string out = outcome_of([&] { t.recv(1, 500, &v, sizeof v); });
           const double secs =
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
           t.set_timeout(saved);
           if (secs < 0.25 || secs > 5) out += " (after " + std::to_string(secs) + " s)";
           out += " | " + outcome_of([&] { t.send(1, 501, &v, sizeof v); });
           return out;
         }
         if (t.rank() != 1) return std::string();
         int v = 0;
         return outcome_of([&] { t.recv(0, 501, &v, sizeof v); });
       },
       [](int rank, int, const std::string& outcome) {
         if (rank != 0) return expect_success(rank, 0, outcome);
         EXPECT_EQ(outcome.rfind("TimeoutError: ", 0), 0u) << outcome;
         expect_contains(outcome, "rank 1", rank);
         EXPECT_EQ(outcome.find("(after"), std::string::npos) << outcome;
         EXPECT_EQ(outcome.substr(outcome.size() - 3), " | ") << outcome;
       }});

  // Collectives over the transport give exact answers (small integers, so
  // float sums are exact), for counts 0, 1, odd and large.
  cases.push_back({"CollectivesGiveExactAnswers",
                   [](Transport& t) {
                     return outcome_of([&] {
                       const int n = t.size();
                       const Group g = Group::all(n, t.rank());
                       for (int64_t count : {0, 1, 17, 100003}) {
                         std::vector<float> x(count);
                         for (int64_t i = 0; i < count; ++i)
                           x[i] = static_cast<float>(t.rank() + 1 + i % 7);
                         allreduce(t, g, x.data(), count, float32, ReduceOp::kSum, 600 + count);
                         for (int64_t i = 0; i < count; ++i)
                           ASSERT_EQ(x[i], static_cast<float>(n * (n + 1) / 2 + n * (i % 7)));
                         std::vector<int32_t> mine(count, t.rank()), all(count * n);
                         allgather(t, g, mine.data(), all.data(), count, int32, 700 + count);
                         for (int r = 0; r < n; ++r)
                           for (int64_t i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], r);
                       }
                     });
                   },
                   expect_success});
  return cases;
}

}  // namespace

const std::vector<ContractCase>& transport_contract() {
  static const std::vector<ContractCase> cases = make_cases();
  return cases;
}

std::string outcome_of(const std::function<void()>& f) {
  try {
    f();
    return "";
  } catch (const TimeoutError& e) {
    return std::string("TimeoutError: ") + e.what();
  } catch (const PeerLostError& e) {
    return std::string("PeerLostError: ") + e.what();
  } catch (const ValueError& e) {
    return std::string("ValueError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace mtf::testing
