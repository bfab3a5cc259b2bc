// Mesh TensorFlow's halo exchanges (include/mtf/ops.h), composed of shift,
// slice and concat: a shift along a split blocks dimension passes only the
// neighbouring processors' blocks.
#include "ops/op_util.h"

namespace mtf {
namespace {

Tensor exchange(const Tensor& x, const DimRef& blocks_ref, const DimRef& size_ref,
                int64_t halo_size, bool wrap, bool right_too, const char* what) {
  const OriginScope origin = ops::made_by(what, x);
  const Dimension blocks = ops::dim_of(what, x, blocks_ref);
  const Dimension block = ops::dim_of(what, x, size_ref);
  if (halo_size < 0 || blocks.name == block.name) {
    throw ValueError(detail::str_cat(what, ": needs halo_size >= 0 (got ", halo_size,
                                     ") and two different dimensions for the blocks and the "
                                     "positions in a block (got ",
                                     blocks.to_string(), " and ", block.to_string(), ")"));
  }
  if (halo_size == 0) return x;
  const int64_t whole = halo_size / block.size, part = halo_size % block.size;
  std::vector<Tensor> parts;
  // The blocks on the left, farthest first: the last `part` positions of
  // the block whole + 1 away, then whole blocks.
  if (part > 0)
    parts.push_back(shift(slice(x, block.size - part, part, block), whole + 1, blocks, wrap));
  for (int64_t i = whole; i >= 1; --i) parts.push_back(shift(x, i, blocks, wrap));
  parts.push_back(x);
  if (right_too) {
    for (int64_t i = 1; i <= whole; ++i) parts.push_back(shift(x, -i, blocks, wrap));
    if (part > 0) parts.push_back(shift(slice(x, 0, part, block), -(whole + 1), blocks, wrap));
  }
  return concat(parts, block);
}

}  // namespace

Tensor halo_exchange(const Tensor& x, const DimRef& blocks_dim, const DimRef& block_size_dim,
                     int64_t halo_size, bool wrap) {
  return exchange(x, blocks_dim, block_size_dim, halo_size, wrap, true, "halo_exchange");
}

Tensor left_halo_exchange(const Tensor& x, const DimRef& blocks_dim, const DimRef& block_size_dim,
                          int64_t halo_size, bool wrap) {
  return exchange(x, blocks_dim, block_size_dim, halo_size, wrap, false, "left_halo_exchange");
}

}  // namespace mtf
