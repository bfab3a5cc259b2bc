// Mesh TensorFlow's logical ops and all/any reductions, on bool tensors (a
// number is true where it is nonzero, NaN included), composed of
// comparisons, minimum / maximum of bools, and min / max reductions of their
// int32 values (so that a reduction over a split dimension allreduces int32).
#include "mtf/errors.h"
#include "mtf/ops.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

// x as bool: a bool tensor as it is, a number "nonzero".
Tensor truth(const char* op, const Tensor& x) {
  if (!x.valid()) throw ValueError(std::string(op) + ": an input is an invalid mtf::Tensor");
  if (x.dtype() == bool_) return x;
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
  return cast(reduce_min(cast(truth("reduce_all", x), int32), spec), bool_);
}

Tensor reduce_any(const Tensor& x, const ReduceSpec& spec) {
  return cast(reduce_max(cast(truth("reduce_any", x), int32), spec), bool_);
}

}  // namespace mtf
