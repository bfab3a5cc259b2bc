// The mean softmax cross-entropy of class ids (include/mtf/layers.h).
#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor softmax_cross_entropy_mean(const Tensor& logits, const Tensor& targets, const DimRef& vocab,
                                  float z_loss) {
  const OriginScope origin = ops::made_by("layers::softmax_cross_entropy_mean", logits);
  if (targets.dtype() != int32) {
    throw DTypeError(detail::str_cat("softmax_cross_entropy_mean: targets ", targets.describe(),
                                     " must be int32 class ids"));
  }
  const Dimension vocab_dim = ops::dim_of("softmax_cross_entropy_mean", logits, vocab);
  // bfloat16 logits: the loss is formed and returned in float32.
  if (logits.dtype() == bfloat16)
    return softmax_cross_entropy_mean(cast(logits, float32), targets, vocab, z_loss);
  const Tensor per_example =
      softmax_cross_entropy_with_logits(logits, one_hot(targets, vocab_dim), vocab_dim, z_loss);
  return reduce_mean(per_example);
}

}  // namespace mtf::layers
