// Mesh TensorFlow's logical ops and all/any reductions over truth values as
// comparisons give them (int32 1 / 0; any nonzero input is true), composed
// of comparisons, minimum / maximum and min / max reductions.
#include "mtf/errors.h"
#include "mtf/ops.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

// 1 where x is nonzero, else 0 (int32); an int32 0/1 tensor as it is.
Tensor truth(const char* op, const Tensor& x) {
  if (!x.valid()) throw ValueError(std::string(op) + ": an input is an invalid mtf::Tensor");
  return not_equal(x, ops::scalar_like(x, 0.0f));
}

}  // namespace

Tensor logical_not(const Tensor& x) {
  const Tensor t = truth("logical_not", x);
  return equal(t, ops::scalar_like(t, 0.0f));
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return minimum(truth("logical_and", a), truth("logical_and", b));
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  return maximum(truth("logical_or", a), truth("logical_or", b));
}

Tensor reduce_all(const Tensor& x, const ReduceSpec& spec) {
  return reduce_min(truth("reduce_all", x), spec);
}

Tensor reduce_any(const Tensor& x, const ReduceSpec& spec) {
  return reduce_max(truth("reduce_any", x), spec);
}

}  // namespace mtf
