// embedding: a table of vectors looked up by id (include/mtf/layers.h).
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor embedding(const Tensor& ids, const Dimension& vocab_dim, const Dimension& output_dim,
                 const std::string& name, float init_stddev, const VariableDType& dtype) {
  const OriginScope origin = ops::made_by("layers::embedding \"" + name + "\"", ids);
  const Tensor table =
      get_or_create_variable(ids.mesh(), name + "/weights", Shape({vocab_dim, output_dim}),
                             Initializer::normal(0.0f, init_stddev), dtype);
  return gather(table, ids, vocab_dim);
}

}  // namespace mtf::layers
