// feeds.h — what a Session's run is fed: the block of a placeholder this
// process needs (its processors' slices' bounding box), and the check that
// every fed value is a placeholder's whole tensor or exactly that block.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "kernels/kernel_context.h"
#include "lowering/program.h"
#include "mtf/session.h"

namespace mtf::detail {

// Session::local_feed_block for the processors `local` of `mesh` under
// `rules`. ValueError for a non-placeholder.
Session::FeedBlock feed_block(const Tensor& placeholder, const MeshShape& mesh,
                              const LayoutRules& rules, const std::vector<int64_t>& local);

// The fed values by placeholder tensor id, each with its offset in the
// logical tensor. ValueError for a feed of a non-placeholder or of another
// graph's placeholder, of the wrong shape or dtype (naming both and the
// block it may be), or a placeholder the program needs that was not fed.
std::map<int64_t, FedValue> check_feeds(const Graph& graph, const Program& program,
                                        const Feeds& feeds, const MeshShape& mesh,
                                        const LayoutRules& rules,
                                        const std::vector<int64_t>& local);

}  // namespace mtf::detail
