#include "session/feeds.h"

#include <algorithm>
#include <climits>
#include <string>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::detail {
namespace {

// "[0, 128, 0]"
std::string offsets_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Session::FeedBlock feed_block(const Tensor& t, const MeshShape& mesh, const LayoutRules& rules,
                              const std::vector<int64_t>& local) {
  if (!t.valid() || t.op().type() != "placeholder") {
    throw ValueError("Session::local_feed_block: " + (t.valid() ? t.describe() : "(invalid)") +
                     " is not a placeholder");
  }
  const TensorLayout layout = TensorLayout::make(t.shape(), rules, mesh, t.op().name());
  const Shape slice = layout.slice_shape();
  const int rank = t.shape().ndims();
  std::vector<int64_t> lo(rank, INT64_MAX), hi(rank, 0);
  for (int64_t p : local) {
    const std::vector<int64_t> b = layout.slice_begin(p);
    for (int a = 0; a < rank; ++a) {
      lo[a] = std::min(lo[a], b[a]);
      hi[a] = std::max(hi[a], b[a] + slice[a].size);
    }
  }
  Session::FeedBlock block;
  std::vector<Dimension> dims;
  for (int a = 0; a < rank; ++a) {
    if (local.empty()) lo[a] = 0, hi[a] = t.shape()[a].size;
    block.whole = block.whole && lo[a] == 0 && hi[a] == t.shape()[a].size;
    dims.push_back({t.shape()[a].name, hi[a] - lo[a]});
  }
  block.begin = lo;
  block.shape = Shape(dims);
  return block;
}

std::map<int64_t, FedValue> check_feeds(const Graph& graph, const Program& program,
                                        const Feeds& feeds, const MeshShape& mesh,
                                        const LayoutRules& rules,
                                        const std::vector<int64_t>& local) {
  std::map<int64_t, FedValue> m;
  for (const auto& [t, value] : feeds) {
    if (!t.valid() || t.op().type() != "placeholder") {
      throw ValueError("Session::run: feed target " + (t.valid() ? t.describe() : "(invalid)") +
                       " is not a placeholder");
    }
    if (&t.graph() != &graph) {
      throw ValueError("Session::run: placeholder " + t.describe() +
                       " belongs to another graph than this session's; feed this graph's "
                       "placeholders");
    }
    const Session::FeedBlock block = feed_block(t, mesh, rules, local);
    const bool whole = value.valid() && value.shape() == t.shape();
    const bool part = value.valid() && value.shape() == block.shape;
    if (!(whole || part) || value.dtype() != t.dtype()) {
      std::string want = str_cat("exactly its shape ", t.shape().to_string());
      if (!block.whole) {
        want += str_cat(" or this process's block ", block.shape.to_string(), " (at ",
                        offsets_text(block.begin), ", Session::local_feed_block)");
      }
      throw ValueError(str_cat("Session::run: placeholder ", t.describe(), " was fed ",
                               value.valid()
                                   ? value.shape().to_string() + " " + dtype_name(value.dtype())
                                   : std::string("an empty HostTensor"),
                               "; feed ", want, " and dtype ", dtype_name(t.dtype())));
    }
    m[t.id()] = {value, whole ? std::vector<int64_t>(static_cast<size_t>(t.shape().ndims()), 0)
                              : block.begin};
  }
  for (const Operation* p : program.placeholders) {
    if (!m.count(p->output(0).id())) {
      throw ValueError("Session::run: placeholder " + p->output(0).describe() +
                       " is needed by this run but was not fed");
    }
  }
  return m;
}

}  // namespace mtf::detail
