// embedding: a table of vectors looked up by id (include/mtf/layers.h).
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {

Tensor embedding_weights(const Mesh& mesh, const Dimension& vocab_dim, const Dimension& output_dim,
                         const VariableDType& dtype, const std::string& name,
                         const std::vector<Dimension>& ensemble_dims,
                         const std::optional<Initializer>& initializer) {
  std::vector<Dimension> dims = ensemble_dims;
  dims.push_back(vocab_dim);
  dims.push_back(output_dim);
  return get_or_create_variable(mesh, name + "/weights", Shape(dims),
                                initializer.value_or(Initializer::normal(0.0f, 1.0f)), dtype);
}

Tensor embedding_weights(const Mesh& mesh, const Dimension& vocab_dim, const Dimension& output_dim,
                         const VariableDType& dtype, const std::string& name,
                         const Dimension& ensemble_dim,
                         const std::optional<Initializer>& initializer) {
  return embedding_weights(mesh, vocab_dim, output_dim, dtype, name,
                           std::vector<Dimension>{ensemble_dim}, initializer);
}

Tensor embedding(const Tensor& ids, const Dimension& vocab_dim, const Dimension& output_dim,
                 const std::string& name, float init_stddev, const VariableDType& dtype,
                 const std::optional<Dimension>& ensemble_dim) {
  const OriginScope origin = ops::made_by("layers::embedding \"" + name + "\"", ids);
  if (ensemble_dim && !ids.shape().contains(*ensemble_dim)) {
    throw ShapeError("embedding \"" + name + "\": ids " + ids.describe() +
                     " lack the ensemble dimension " + ensemble_dim->to_string());
  }
  const Tensor table = embedding_weights(
      ids.mesh(), vocab_dim, output_dim, dtype, name,
      ensemble_dim ? std::vector<Dimension>{*ensemble_dim} : std::vector<Dimension>{},
      Initializer::normal(0.0f, init_stddev));
  return gather(table, ids, vocab_dim);
}

}  // namespace mtf::layers
