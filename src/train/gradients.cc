// Reverse-mode differentiation: walk the ops between xs and ys in reverse
// graph order, summing each tensor's gradient contributions and asking each
// op for its inputs' gradients as new graph ops.
#include "mtf/gradients.h"

#include <map>
#include <set>

#include "core/check.h"
#include "mtf/errors.h"
#include "mtf/ops.h"

namespace mtf {

std::vector<Tensor> gradients(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                              const std::vector<Tensor>& grad_ys) {
  if (ys.empty()) throw ValueError("gradients: no ys given");
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    throw ValueError(detail::str_cat("gradients: ", grad_ys.size(), " grad_ys for ", ys.size(),
                                     " ys; give one per y or none"));
  }
  for (const Tensor& t : ys)
    if (!t.valid()) throw ValueError("gradients: a y is an invalid mtf::Tensor");
  for (const Tensor& t : xs)
    if (!t.valid()) throw ValueError("gradients: an x is an invalid mtf::Tensor");
  Graph& graph = ys[0].graph();
  const auto& ops = graph.operations();
  std::map<const Operation*, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i].get()] = i;

  // Tensors that depend on some x (through differentiable float paths).
  std::set<int64_t> downstream;
  for (const Tensor& x : xs) downstream.insert(x.id());
  size_t first = ops.size();
  for (const Tensor& x : xs) first = std::min(first, position.at(&x.op()));
  for (size_t i = first; i < ops.size(); ++i) {
    const Operation* op = ops[i].get();
    bool live = false;
    for (const Tensor& in : op->inputs()) live = live || downstream.count(in.id());
    if (live && op->differentiable())
      for (const Tensor& out : op->outputs())
        if (is_floating(out.dtype())) downstream.insert(out.id());
  }

  std::map<int64_t, std::vector<Tensor>> contributions;
  for (size_t i = 0; i < ys.size(); ++i) {
    const Tensor& y = ys[i];
    if (!is_floating(y.dtype())) {
      throw DTypeError("gradients: y " + y.describe() +
                       " must be float32 or bfloat16 to be differentiated");
    }
    const OriginScope origin(graph, "the gradient of \"" + y.name() + "\" (its seed)");
    Tensor g = grad_ys.empty() ? ones(y.mesh(), y.shape(), y.dtype()) : grad_ys[i];
    if (!(g.shape() == y.shape())) {
      g = grad_ys.empty() ? g : transpose(g, y.shape());
    }
    contributions[y.id()].push_back(g);
  }
  auto total = [&](const Tensor& t) -> Tensor {
    auto it = contributions.find(t.id());
    if (it == contributions.end() || it->second.empty()) return Tensor();
    if (it->second.size() > 1) {
      const OriginScope origin(
          graph, "the gradient of \"" + t.name() + "\" (the sum of its contributions)");
      Tensor s = add_n(it->second);
      it->second = {s};
    }
    return it->second[0];
  };

  // ys may sit anywhere; walk back from the last of them.
  size_t last = 0;
  for (const Tensor& y : ys) last = std::max(last, position.at(&y.op()));
  std::set<int64_t> x_ids;
  for (const Tensor& x : xs) x_ids.insert(x.id());
  for (size_t i = last + 1; i-- > first;) {
    const Operation* op = ops[i].get();
    bool any_input_live = false;
    for (const Tensor& in : op->inputs())
      any_input_live = any_input_live || downstream.count(in.id());
    if (!any_input_live || !op->differentiable()) continue;
    std::vector<Tensor> gouts;
    bool any = false;
    for (const Tensor& out : op->outputs()) {
      gouts.push_back(total(out));
      any = any || gouts.back().valid();
    }
    if (!any) continue;
    // The gradient's ops are attributed to the op (or the call that made
    // it) in error messages.
    const OriginScope origin(
        op->graph(),
        "the gradient of " + (op->origin().empty() ? op->attribution() : op->origin()));
    std::vector<Tensor> gins = op->gradient(gouts);
    MTF_CHECK(gins.size() == op->inputs().size() || gins.empty());
    for (size_t k = 0; k < gins.size(); ++k) {
      const Tensor& in = op->inputs()[k];
      if (!gins[k].valid() || !downstream.count(in.id())) continue;
      Tensor g = gins[k];
      if (g.shape() != in.shape()) g = transpose(g, in.shape());
      contributions[in.id()].push_back(g);
    }
  }

  std::vector<Tensor> result;
  for (const Tensor& x : xs) {
    Tensor g = total(x);
    result.push_back(g.valid() ? g : zeros(x.mesh(), x.shape(), x.dtype()));
  }
  return result;
}

}  // namespace mtf
