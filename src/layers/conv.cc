// Convolution and pooling layers over mtf::conv / conv_transpose / pooling.
#include <string>

#include "mtf/errors.h"
#include "mtf/layers.h"
#include "ops/op_util.h"

namespace mtf::layers {
namespace {

// The filter [<name>_k0..., first, second] and its variance-scaling fan-in
// (window x input channels).
Tensor filter_variable(const Tensor& x, const std::vector<int64_t>& filter_size,
                       const Dimension& first, const Dimension& second,
                       const Dimension& in_channels, const std::string& name,
                       const ConvOptions& options) {
  std::vector<Dimension> dims, fan_in;
  for (size_t i = 0; i < filter_size.size(); ++i) {
    dims.push_back({name + "_k" + std::to_string(i), filter_size[i]});
    fan_in.push_back(dims.back());
  }
  fan_in.push_back(in_channels);
  dims.push_back(first);
  dims.push_back(second);
  const Initializer init =
      options.has_initializer ? options.filter_initializer : variance_scaling(fan_in);
  return get_or_create_variable(x.mesh(), name + "/filter", Shape(dims), init,
                                variable_dtype_for(x));
}

const Dimension& channels_of(const std::string& layer, const Tensor& x, size_t spatial) {
  if (x.shape().ndims() < static_cast<int>(spatial) + 1) {
    throw ShapeError(layer + ": input " + x.describe() + " needs " + std::to_string(spatial) +
                     " spatial dimensions and a channel dimension (last)");
  }
  return x.shape()[x.shape().ndims() - 1];
}

Tensor finish(Tensor y, const Dimension& output_dim, const std::string& name,
              const ConvOptions& options) {
  if (options.use_bias) {
    y = y + get_or_create_variable(y.mesh(), name + "/bias", Shape({output_dim}),
                                   Initializer::zeros(), variable_dtype_for(y));
  }
  if (options.activation) y = options.activation(y);
  return y;
}

void require_rank(const std::string& layer, const std::vector<int64_t>& sizes, size_t n) {
  if (sizes.size() != n) {
    throw ValueError(layer + ": " + std::to_string(sizes.size()) + " window sizes; give " +
                     std::to_string(n) + ", one per spatial dimension");
  }
}

}  // namespace

Tensor conv(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
            const std::string& name, const ConvOptions& options) {
  const OriginScope origin = ops::made_by("layers::conv \"" + name + "\"", x);
  const Dimension in = channels_of("conv \"" + name + "\"", x, filter_size.size());
  const Tensor filter = filter_variable(x, filter_size, in, output_dim, in, name, options);
  return finish(
      mtf::conv(x, filter, options.strides, options.padding, options.dilations, name + "/conv"),
      output_dim, name, options);
}

Tensor conv1d(const Tensor& x, const Dimension& output_dim, int64_t filter_size,
              const std::string& name, const ConvOptions& options) {
  return conv(x, output_dim, {filter_size}, name, options);
}

Tensor conv2d(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
              const std::string& name, const ConvOptions& options) {
  require_rank("conv2d \"" + name + "\"", filter_size, 2);
  return conv(x, output_dim, filter_size, name, options);
}

Tensor conv3d(const Tensor& x, const Dimension& output_dim, const std::vector<int64_t>& filter_size,
              const std::string& name, const ConvOptions& options) {
  require_rank("conv3d \"" + name + "\"", filter_size, 3);
  return conv(x, output_dim, filter_size, name, options);
}

Tensor conv_transpose(const Tensor& x, const Dimension& output_dim,
                      const std::vector<int64_t>& filter_size, const std::string& name,
                      const ConvOptions& options) {
  const OriginScope origin = ops::made_by("layers::conv_transpose \"" + name + "\"", x);
  const Dimension in = channels_of("conv_transpose \"" + name + "\"", x, filter_size.size());
  const Tensor filter = filter_variable(x, filter_size, output_dim, in, in, name, options);
  return finish(mtf::conv_transpose(x, filter, options.strides, options.padding, options.dilations,
                                    name + "/conv_transpose"),
                output_dim, name, options);
}

Tensor conv2d_transpose(const Tensor& x, const Dimension& output_dim,
                        const std::vector<int64_t>& filter_size, const std::string& name,
                        const ConvOptions& options) {
  require_rank("conv2d_transpose \"" + name + "\"", filter_size, 2);
  return conv_transpose(x, output_dim, filter_size, name, options);
}

Tensor conv3d_transpose(const Tensor& x, const Dimension& output_dim,
                        const std::vector<int64_t>& filter_size, const std::string& name,
                        const ConvOptions& options) {
  require_rank("conv3d_transpose \"" + name + "\"", filter_size, 3);
  return conv_transpose(x, output_dim, filter_size, name, options);
}

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& ksize) {
  require_rank("max_pool2d", ksize, 2);
  return max_pool(x, ksize, ksize, "VALID");
}
Tensor max_pool3d(const Tensor& x, const std::vector<int64_t>& ksize) {
  require_rank("max_pool3d", ksize, 3);
  return max_pool(x, ksize, ksize, "VALID");
}
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& ksize) {
  require_rank("avg_pool2d", ksize, 2);
  return avg_pool(x, ksize, ksize, "VALID");
}
Tensor avg_pool3d(const Tensor& x, const std::vector<int64_t>& ksize) {
  require_rank("avg_pool3d", ksize, 3);
  return avg_pool(x, ksize, ksize, "VALID");
}

Tensor separable_conv1d(const Tensor& x, const Dimension& output_dim, int min_relative_pos,
                        int max_relative_pos, const std::string& name, float depthwise_scale,
                        float pointwise_scale, bool use_bias,
                        const std::vector<Tensor>& kernel_depth_weights) {
  const OriginScope origin = ops::made_by("layers::separable_conv1d \"" + name + "\"", x);
  if (x.shape().ndims() < 2) {
    throw ShapeError("separable_conv1d \"" + name + "\": x " + x.describe() +
                     " needs [..., length, depth] dimensions");
  }
  if (max_relative_pos < min_relative_pos) {
    throw ValueError(detail::str_cat("separable_conv1d \"", name, "\": max_relative_pos ",
                                     max_relative_pos, " is below min_relative_pos ",
                                     min_relative_pos));
  }
  const Dimension depth = x.shape()[x.shape().ndims() - 1];
  const Dimension length = x.shape()[x.shape().ndims() - 2];
  const int width = max_relative_pos - min_relative_pos + 1;
  if (!kernel_depth_weights.empty() && static_cast<int>(kernel_depth_weights.size()) != width) {
    throw ValueError(detail::str_cat("separable_conv1d \"", name,
                                     "\": ", kernel_depth_weights.size(),
                                     " kernel_depth_weights for a ", width, "-wide filter"));
  }
  const VariableDType vd = variable_dtype_for(x);
  const Initializer depthwise_init = VarianceScaling{depthwise_scale / width}.for_kernel({}, {});
  Tensor sum;
  for (int k = 0; k < width; ++k) {
    const std::string part = name + "/depthwise_dense_" + std::to_string(k);
    Tensor w = kernel_depth_weights.empty() ? Tensor() : kernel_depth_weights[k];
    if (w.valid() && w.shape() != Shape({depth})) {
      throw ShapeError("separable_conv1d \"" + name + "\": kernel_depth_weights[" +
                       std::to_string(k) + "] " + w.describe() + " must be " +
                       Shape({depth}).to_string());
    }
    if (!w.valid())
      w = get_or_create_variable(x.mesh(), part + "/kernel", Shape({depth}), depthwise_init, vd);
    Tensor term = shift(x, -(min_relative_pos + k), length, false) * w;
    if (use_bias && k == 0)
      term = term + get_or_create_variable(x.mesh(), part + "/bias", Shape({depth}),
                                           Initializer::zeros(), vd);
    sum = sum.valid() ? sum + term : term;
  }
  DenseOptions pointwise;
  pointwise.use_bias = use_bias;
  pointwise.variance_scaling_options = VarianceScaling{pointwise_scale};
  return dense(sum, {output_dim}, {depth}, name + "/pointwise_dense", pointwise);
}

}  // namespace mtf::layers
