// The calibration's fit of a wait per collective and a latency per message
// for ranks that outnumber the CPUs (tools/wait_fit.h).
#include <gtest/gtest.h>

#include <vector>

#include "wait_fit.h"

namespace {

using mtf::tools::fit_wait_and_latency;
using mtf::tools::WaitReference;

// A reference whose measured step is what the linear model gives for
// (wait, extra).
WaitReference exact(double without, double per_wait, double per_extra, double wait, double extra) {
  return {without + per_wait * wait + per_extra * extra, without, per_wait, per_extra};
}

TEST(WaitFit, RecoversBothCostsFromTwoLayouts) {
  // Few collectives of many rounds, and many collectives of one round each.
  const std::vector<WaitReference> refs = {exact(3.8e-3, 3, 10, 40e-6, 130e-6),
                                           exact(3.2e-3, 8, 5, 40e-6, 130e-6)};
  const auto [wait, extra] = fit_wait_and_latency(refs, 0.01, 0.01);
  EXPECT_NEAR(wait, 40e-6, 1e-9);
  EXPECT_NEAR(extra, 130e-6, 1e-9);
}

TEST(WaitFit, ANegativeWaitIsNotAnAnswer) {
  // The calibration's figures of one run: the data-parallel MLP needs 1.4 ms
  // more than simulated without either cost, the hybrid 0.55 ms, so the
  // free 2x2 solution wants a negative wait; the best with wait 0 is a
  // latency that leaves both within a few percent.
  const std::vector<WaitReference> refs = {{5.22e-3, 3.78e-3, 3, 10}, {3.72e-3, 3.17e-3, 4, 5}};
  const auto [wait, extra] = fit_wait_and_latency(refs, 0.01, 0.01);
  EXPECT_EQ(wait, 0);
  EXPECT_NEAR(extra, 133e-6, 2e-6);
  for (const WaitReference& r : refs)
    EXPECT_NEAR((r.without + r.per_extra * extra) / r.measured, 1, 0.05);
}

TEST(WaitFit, OneReferenceFitsTheWaitAlone) {
  const auto [wait, extra] = fit_wait_and_latency({exact(4e-3, 5, 0, 2e-4, 0)}, 0.01, 0.01);
  EXPECT_NEAR(wait, 2e-4, 1e-12);
  EXPECT_EQ(extra, 0);
}

TEST(WaitFit, NothingToAddAndCapsHold) {
  // Measured faster than simulated with neither cost: both stay 0.
  const auto none = fit_wait_and_latency({{3e-3, 4e-3, 3, 10}, {2e-3, 2.5e-3, 4, 5}}, 0.01, 0.01);
  EXPECT_EQ(none.first, 0);
  EXPECT_EQ(none.second, 0);
  // A step measured a second slower would need waits far beyond the caps.
  const auto capped = fit_wait_and_latency({{1.004, 4e-3, 3, 0}}, 0.01, 0.01);
  EXPECT_EQ(capped.first, 0.01);
}

}  // namespace
