// checkpoint::agree: every rank returns the lowest failed rank (or -1), and
// rank 0 finishes only when every rank succeeded.
#include "checkpoint/agreement.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "mtf/errors.h"
#include "mtf/in_process_transport.h"

namespace mtf {
namespace {

constexpr checkpoint::AgreementTags kTags{101, 102};

// Runs agree on n ranks, `failing` ranks reporting failure; returns what
// each rank got, and counts finish's runs.
std::vector<int> agree_on(int n, const std::vector<int>& failing, bool finish_throws, int* finished,
                          std::vector<std::string>* errors = nullptr) {
  std::vector<int> got(static_cast<size_t>(n), -2);
  std::vector<std::string> errs(static_cast<size_t>(n));
  std::atomic<int> runs{0};
  run_in_process(n, [&](Transport& t) {
    bool ok = true;
    for (int f : failing) ok = ok && f != t.rank();
    std::string& error = errs[static_cast<size_t>(t.rank())];
    if (!ok) error = "rank's own failure";
    got[static_cast<size_t>(t.rank())] = checkpoint::agree(&t, ok, error, kTags, [&] {
      ++runs;
      if (finish_throws) throw IoError("rename failed");
    });
  });
  *finished = runs;
  if (errors) *errors = errs;
  return got;
}

TEST(Agreement, AllSucceedThenRankZeroFinishesOnce) {
  int finished = 0;
  EXPECT_EQ(agree_on(4, {}, false, &finished), std::vector<int>(4, -1));
  EXPECT_EQ(finished, 1);
}

TEST(Agreement, EveryRankLearnsTheLowestFailedRankAndNothingIsFinished) {
  int finished = 0;
  std::vector<std::string> errors;
  EXPECT_EQ(agree_on(5, {3, 2}, false, &finished, &errors), std::vector<int>(5, 2));
  EXPECT_EQ(finished, 0);
  EXPECT_EQ(errors[2], "rank's own failure");
  EXPECT_EQ(errors[0], "");
}

TEST(Agreement, AFailedFinishIsRankZerosFailure) {
  int finished = 0;
  std::vector<std::string> errors;
  EXPECT_EQ(agree_on(3, {}, true, &finished, &errors), std::vector<int>(3, 0));
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(errors[0], "rename failed");
}

TEST(Agreement, ASingleProcessJustFinishes) {
  std::string error;
  int runs = 0;
  EXPECT_EQ(checkpoint::agree(nullptr, true, error, kTags, [&] { ++runs; }), -1);
  EXPECT_EQ(checkpoint::agree(nullptr, false, error, kTags, [&] { ++runs; }), 0);
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace mtf
