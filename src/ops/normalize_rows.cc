// normalize_rows: layer norm's bfloat16 core as a composition of ops, with a
// gradient written by hand, both recorded for the lowering's rows pass (which
// runs kernels/layer_norm_rows.cc's kernels in their place, with their bits,
// where nothing splits the dimension).
#include "ops/op_util.h"

namespace mtf::ops {

Tensor normalize_rows(const Tensor& x, const Dimension& dim, float epsilon) {
  // The moments in float32, the elementwise steps in bfloat16 (each computed
  // in float32 and rounded), as Mesh TensorFlow keeps norm statistics.
  const Tensor xs = stop_gradient(x);
  const Tensor mean = reduce_mean(cast(xs, float32), dim);
  const Tensor centered = xs - cast(mean, bfloat16);
  const Tensor variance = reduce_mean(cast(square(centered), float32), dim);
  const Tensor r = cast(rsqrt(variance + epsilon), bfloat16);
  const Tensor z = centered * r;
  record_normalize_rows(xs, z, r, dim, epsilon);
  // dz -> r * (dz - mean(dz) - z * mean(dz * z)): reads z and r only.
  auto result = std::make_shared<Tensor>();
  *result = with_gradient(x, z, [result, r, dim](const Tensor& dz) {
    const Tensor& out = *result;
    const Tensor m1 = cast(reduce_mean(cast(dz, float32), dim), bfloat16);
    const Tensor m2 = cast(reduce_mean(cast(dz * out, float32), dim), bfloat16);
    const Tensor dx = (dz - m1 - out * m2) * r;
    record_normalize_gradient_rows(dz, out, r, dx, dim);
    return dx;
  });
  return *result;
}

}  // namespace mtf::ops
