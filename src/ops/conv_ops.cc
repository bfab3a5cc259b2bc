// Convolutions (forward, input gradient = transposed convolution, filter
// gradient) and max / average pooling over 1 to 3 spatial dimensions, with
// the windows that let the lowering split spatial dimensions (halos).
//
// Every op here relates a "conv input" side x [batch..., X..., Cx] to a
// "conv output" side y [batch..., Y..., Cy] through one ConvSpec: output
// position o of a spatial axis reads x at o * stride + j * dilation -
// pad_before. Each op's gradient is another of these ops on the same spec.
#include <algorithm>

#include "kernels/conv.h"
#include "kernels/kernel_context.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

using kernels::ConvAxis;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// The spatial geometry shared by a forward op and its gradients.
struct ConvSpec {
  std::vector<std::string> names;  // spatial dimensions (x and y share them)
  std::vector<ConvAxis> axes;
  int n() const { return static_cast<int>(axes.size()); }
  int axis_of(const std::string& name) const {
    const auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
  }
  // Rows [begin, end) of x that y's block `position` of `parts` reads.
  void x_window(int a, int64_t position, int64_t parts, int64_t* begin, int64_t* end) const {
    const ConvAxis& c = axes[a];
    const int64_t block = c.y_size / parts;
    *begin = position * block * c.stride - c.pad_before;
    *end = ((position + 1) * block - 1) * c.stride - c.pad_before + (c.kernel - 1) * c.dilation + 1;
  }
  // Rows [begin, end) of y whose windows touch x's block `position` (past
  // y's ends too: the same extent everywhere, so no processor fetches rows
  // it does not read).
  void y_window(int a, int64_t position, int64_t parts, int64_t* begin, int64_t* end) const {
    const ConvAxis& c = axes[a];
    const int64_t block = c.x_size / parts;
    *begin = ceil_div(position * block + c.pad_before - (c.kernel - 1) * c.dilation, c.stride);
    *end = std::max(*begin, floor_div((position + 1) * block - 1 + c.pad_before, c.stride) + 1);
  }
};

// Where the spatial dimensions of a [batch..., S..., C] slice start.
kernels::SpatialBegin spatial_begin(const std::vector<int64_t>& offset, int n) {
  const int r = static_cast<int>(offset.size());
  return kernels::SpatialBegin(offset.begin() + (r - n - 1), offset.end() - 1);
}

// [batch dims of `batch_from`..., spatial dims named by spec with the sizes
// `sizes`..., channels].
Shape side_shape(const Shape& batch_from, int n, const std::vector<std::string>& names,
                 const std::vector<int64_t>& sizes, const Dimension& channels) {
  std::vector<Dimension> dims(batch_from.dims().begin(), batch_from.dims().end() - n - 1);
  for (int i = 0; i < n; ++i) dims.push_back({names[i], sizes[i]});
  dims.push_back(channels);
  return Shape(dims);
}

std::vector<std::string> batch_names(const Shape& s, int n) {
  std::vector<std::string> r;
  for (int i = 0; i < s.ndims() - n - 1; ++i) r.push_back(s[i].name);
  return r;
}

std::vector<std::string> filter_spatial_names(const Shape& w, int n) {
  std::vector<std::string> r;
  for (int i = 0; i < n; ++i) r.push_back(w[i].name);
  return r;
}

std::vector<int64_t> x_sizes(const ConvSpec& s) {
  std::vector<int64_t> r;
  for (const ConvAxis& a : s.axes) r.push_back(a.x_size);
  return r;
}
std::vector<int64_t> y_sizes(const ConvSpec& s) {
  std::vector<int64_t> r;
  for (const ConvAxis& a : s.axes) r.push_back(a.y_size);
  return r;
}

double conv_flops(const Shape& y, const Shape& w) {
  // 2 * (y elements) * (filter elements / Cy).
  return 2.0 * static_cast<double>(y.num_elements()) *
         static_cast<double>(w.num_elements() / w[w.ndims() - 1].size);
}

Tensor make_conv(const Tensor& x, const Tensor& w, const ConvSpec& spec);
Tensor make_input_grad(const Tensor& dy, const Tensor& w, const ConvSpec& spec,
                       const Shape& x_shape, const std::string& type, const std::string& name);
Tensor make_filter_grad(const Tensor& x, const Tensor& dy, const ConvSpec& spec,
                        const Shape& w_shape);

// What every op here shares: the spec, and input 0 read through windows of
// its spatial dimensions — x's rows for y's blocks (kX: convolution, filter
// gradient, pooling) or y's rows for x's blocks (kY: input gradient).
class SpatialOp : public Operation {
 public:
  enum class Reads { kX, kY };
  SpatialOp(const Mesh& mesh, const std::string& type, std::vector<Tensor> inputs,
            const std::string& name, ConvSpec spec, Reads reads)
      : Operation(mesh, type, std::move(inputs), name), spec_(std::move(spec)), reads_(reads) {}
  bool input_window(int input, const std::string& dim, int64_t position, int64_t parts,
                    int64_t* begin, int64_t* end) const override {
    const int a = spec_.axis_of(dim);
    if (input != 0 || a < 0) return false;
    if (reads_ == Reads::kX) {
      spec_.x_window(a, position, parts, begin, end);
    } else {
      spec_.y_window(a, position, parts, begin, end);
    }
    return true;
  }

 protected:
  const ConvSpec spec_;

 private:
  Reads reads_;
};

// y = conv(x, w): x [batch..., X..., Cx], w [K..., Cx, Cy] -> [batch..., Y..., Cy].
class ConvOp : public SpatialOp {
 public:
  ConvOp(const Tensor& x, const Tensor& w, ConvSpec spec, const std::string& name)
      : SpatialOp(x.mesh(), "conv", {x, w}, name, std::move(spec), Reads::kX) {
    const Shape& ws = w.shape();
    add_output(side_shape(x.shape(), spec_.n(), spec_.names, y_sizes(spec_), ws[ws.ndims() - 1]),
               x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    const int n = spec_.n();
    kernels::conv_forward(spec_.axes, ctx.input(0), spatial_begin(ctx.input_slice_offset(0), n),
                          ctx.input(1), ctx.allocate_output(0),
                          spatial_begin(ctx.output_slice_offset(0), n), ctx.state().reproducible);
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& x = inputs()[0];
    const Tensor& w = inputs()[1];
    return {make_input_grad(g[0], w, spec_, x.shape(), "conv_input_grad", ""),
            make_filter_grad(x, g[0], spec_, w.shape())};
  }
  double flops() const override { return conv_flops(output(0).shape(), inputs()[1].shape()); }
  std::vector<std::string> unsplittable_dims() const override {
    return filter_spatial_names(inputs()[1].shape(), spec_.n());
  }
  std::vector<std::string> reduced_dims() const override {
    const Shape& x = inputs()[0].shape();
    return {x[x.ndims() - 1].name};
  }
};

// dx = conv_input_grad(dy, w): dy [batch..., Y..., Cy], w [K..., Cx, Cy] ->
// x_shape. Also the transposed convolution (upsampling) of dy.
class ConvInputGradOp : public SpatialOp {
 public:
  ConvInputGradOp(const Tensor& dy, const Tensor& w, ConvSpec spec, const Shape& x_shape,
                  const std::string& type, const std::string& name)
      : SpatialOp(dy.mesh(), type, {dy, w}, name, std::move(spec), Reads::kY) {
    add_output(x_shape, dy.dtype());
  }
  void compute(KernelContext& ctx) const override {
    const int n = spec_.n();
    kernels::conv_input_grad(spec_.axes, ctx.input(0), spatial_begin(ctx.input_slice_offset(0), n),
                             ctx.input(1), ctx.allocate_output(0),
                             spatial_begin(ctx.output_slice_offset(0), n),
                             ctx.state().reproducible);
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& dy = inputs()[0];
    const Tensor& w = inputs()[1];
    return {make_conv(g[0], w, spec_), make_filter_grad(g[0], dy, spec_, w.shape())};
  }
  double flops() const override { return conv_flops(inputs()[0].shape(), inputs()[1].shape()); }
  std::vector<std::string> unsplittable_dims() const override {
    return filter_spatial_names(inputs()[1].shape(), spec_.n());
  }
  std::vector<std::string> reduced_dims() const override {
    const Shape& dy = inputs()[0].shape();
    return {dy[dy.ndims() - 1].name};
  }
};

// dw = conv_filter_grad(x, dy): the filter gradient, summed over the batch
// and spatial positions (partial sums over split ones are allreduced).
class ConvFilterGradOp : public SpatialOp {
 public:
  ConvFilterGradOp(const Tensor& x, const Tensor& dy, ConvSpec spec, const Shape& w_shape)
      : SpatialOp(x.mesh(), "conv_filter_grad", {x, dy}, "", std::move(spec), Reads::kX) {
    add_output(w_shape, dy.dtype());
  }
  void compute(KernelContext& ctx) const override {
    const int n = spec_.n();
    kernels::conv_filter_grad(spec_.axes, ctx.input(0), spatial_begin(ctx.input_slice_offset(0), n),
                              ctx.input(1), spatial_begin(ctx.input_slice_offset(1), n),
                              ctx.allocate_output(0), ctx.state().reproducible);
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    const Tensor& x = inputs()[0];
    const Tensor& dy = inputs()[1];
    return {make_input_grad(dy, g[0], spec_, x.shape(), "conv_input_grad", ""),
            make_conv(x, g[0], spec_)};
  }
  double flops() const override { return conv_flops(inputs()[1].shape(), output(0).shape()); }
  std::vector<std::string> unsplittable_dims() const override {
    return filter_spatial_names(output(0).shape(), spec_.n());
  }
  std::vector<std::string> reduced_dims() const override {
    std::vector<std::string> r = batch_names(inputs()[1].shape(), spec_.n());
    r.insert(r.end(), spec_.names.begin(), spec_.names.end());
    return r;
  }
};

// Max or average pooling: x [batch..., X..., C] -> [batch..., Y..., C].
class PoolOp : public SpatialOp {
 public:
  PoolOp(kernels::PoolFn fn, const Tensor& x, ConvSpec spec, const std::string& name)
      : SpatialOp(x.mesh(), fn == kernels::PoolFn::kMax ? "max_pool" : "avg_pool", {x}, name,
                  std::move(spec), Reads::kX),
        fn_(fn) {
    const Shape& xs = x.shape();
    add_output(side_shape(xs, spec_.n(), spec_.names, y_sizes(spec_), xs[xs.ndims() - 1]),
               x.dtype());
  }
  void compute(KernelContext& ctx) const override {
    const int n = spec_.n();
    kernels::pool_forward(fn_, spec_.axes, ctx.input(0),
                          spatial_begin(ctx.input_slice_offset(0), n), ctx.allocate_output(0),
                          spatial_begin(ctx.output_slice_offset(0), n));
  }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override;
  double flops() const override {
    double taps = 1;
    for (const ConvAxis& a : spec_.axes) taps *= static_cast<double>(a.kernel);
    return static_cast<double>(output(0).shape().num_elements()) * taps;
  }

 private:
  kernels::PoolFn fn_;
};

// dx of pooling for output gradient dy; max pooling also reads x.
class PoolGradOp : public SpatialOp {
 public:
  PoolGradOp(kernels::PoolFn fn, const std::vector<Tensor>& inputs, ConvSpec spec,
             const Shape& x_shape)
      : SpatialOp(inputs.back().mesh(),
                  fn == kernels::PoolFn::kMax ? "max_pool_grad" : "avg_pool_grad", inputs, "",
                  std::move(spec), Reads::kY),
        fn_(fn) {
    add_output(x_shape, inputs.back().dtype());
  }
  void compute(KernelContext& ctx) const override {
    const int n = spec_.n();
    const int dy = fn_ == kernels::PoolFn::kMax ? 1 : 0;
    const HostTensor* x = dy ? &ctx.input(0) : nullptr;
    const kernels::SpatialBegin x_at =
        dy ? spatial_begin(ctx.input_slice_offset(0), n) : kernels::SpatialBegin(n, 0);
    kernels::pool_grad(fn_, spec_.axes, x, x_at, ctx.input(dy),
                       spatial_begin(ctx.input_slice_offset(dy), n), ctx.allocate_output(0),
                       spatial_begin(ctx.output_slice_offset(0), n));
  }
  // No second derivatives (the default gradient() says so).
  bool input_window(int input, const std::string& dim, int64_t position, int64_t parts,
                    int64_t* begin, int64_t* end) const override {
    const int a = spec_.axis_of(dim);
    if (a < 0) return false;
    const int dy = fn_ == kernels::PoolFn::kMax ? 1 : 0;
    spec_.y_window(a, position, parts, begin, end);
    if (input == dy) return true;
    // x: every position the windows of those rows of dy inside dy read.
    const ConvAxis& c = spec_.axes[a];
    const int64_t first = std::max<int64_t>(*begin, 0), last = std::min(*end, c.y_size) - 1;
    if (last < first) {
      *end = *begin = first;
      return true;
    }
    *begin = first * c.stride - c.pad_before;
    *end = last * c.stride - c.pad_before + (c.kernel - 1) * c.dilation + 1;
    return true;
  }
  double flops() const override { return static_cast<double>(output(0).shape().num_elements()); }

 private:
  kernels::PoolFn fn_;
};

std::vector<Tensor> PoolOp::gradient(const std::vector<Tensor>& g) const {
  const Tensor& x = inputs()[0];
  std::vector<Tensor> ins;
  if (fn_ == kernels::PoolFn::kMax) ins.push_back(x);
  ins.push_back(g[0]);
  return {x.graph().add<PoolGradOp>(fn_, ins, spec_, x.shape())->output(0)};
}

Tensor make_conv(const Tensor& x, const Tensor& w, const ConvSpec& spec) {
  return x.graph().add<ConvOp>(x, w, spec, "")->output(0);
}
Tensor make_input_grad(const Tensor& dy, const Tensor& w, const ConvSpec& spec,
                       const Shape& x_shape, const std::string& type, const std::string& name) {
  // Batch dimensions come from dy (the same as x's for a gradient).
  const Shape shape =
      side_shape(dy.shape(), spec.n(), spec.names, x_sizes(spec), x_shape[x_shape.ndims() - 1]);
  return dy.graph().add<ConvInputGradOp>(dy, w, spec, shape, type, name)->output(0);
}
Tensor make_filter_grad(const Tensor& x, const Tensor& dy, const ConvSpec& spec,
                        const Shape& w_shape) {
  return x.graph().add<ConvFilterGradOp>(x, dy, spec, w_shape)->output(0);
}

// ---- argument checks shared by the public functions ------------------------

std::vector<int64_t> per_axis(const std::string& what, const std::string& op,
                              const std::vector<int64_t>& v, int n) {
  if (v.empty()) return std::vector<int64_t>(n, 1);
  if (static_cast<int>(v.size()) != n) {
    throw ValueError(detail::str_cat(op, ": ", v.size(), " ", what, " for ", n,
                                     " spatial dimensions; give one per spatial dimension"));
  }
  for (int64_t s : v) {
    if (s < 1) throw ValueError(detail::str_cat(op, ": ", what, " must be >= 1, got ", s));
  }
  return v;
}

bool is_same_padding(const std::string& op, const std::string& padding) {
  if (padding == "SAME" || padding == "same") return true;
  if (padding == "VALID" || padding == "valid") return false;
  throw ValueError(op + ": padding \"" + padding + "\" is neither \"SAME\" nor \"VALID\"");
}

// The forward geometry of an axis from the conv input's size.
ConvAxis forward_axis(const std::string& op, const Dimension& d, int64_t kernel, int64_t stride,
                      int64_t dilation, bool same) {
  ConvAxis a;
  a.x_size = d.size;
  a.kernel = kernel;
  a.stride = stride;
  a.dilation = dilation;
  const int64_t span = (kernel - 1) * dilation + 1;
  if (same) {
    a.y_size = ceil_div(d.size, stride);
    const int64_t total = std::max<int64_t>((a.y_size - 1) * stride + span - d.size, 0);
    a.pad_before = total / 2;
  } else {
    if (d.size < span) {
      throw ShapeError(detail::str_cat(op, ": spatial dimension ", d.to_string(),
                                       " is smaller than the window (", span,
                                       " positions) under VALID padding; use SAME padding or a "
                                       "smaller window"));
    }
    a.y_size = ceil_div(d.size - span + 1, stride);
  }
  return a;
}

// x's spatial dimensions (the n before the last) and their geometry.
ConvSpec spec_of(const std::string& op, const Tensor& x, int n, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                 const std::string& padding) {
  if (x.shape().ndims() < n + 1) {
    throw ShapeError(detail::str_cat(op, ": input ", x.describe(), " needs ", n,
                                     " spatial dimensions and a channel dimension (last)"));
  }
  ops::require_float(op, x);
  const bool same = is_same_padding(op, padding);
  const std::vector<int64_t> s = per_axis("strides", op, strides, n);
  const std::vector<int64_t> d = per_axis("dilations", op, dilations, n);
  ConvSpec spec;
  for (int i = 0; i < n; ++i) {
    const Dimension& dim = x.shape()[x.shape().ndims() - n - 1 + i];
    spec.names.push_back(dim.name);
    spec.axes.push_back(forward_axis(op, dim, kernel[i], s[i], d[i], same));
  }
  return spec;
}

void check_filter(const std::string& op, const Tensor& x, const Tensor& filter, int n,
                  int x_channel_at) {
  const Shape& w = filter.shape();
  if (w.ndims() < 3 || w.ndims() > 5) {
    throw ShapeError(detail::str_cat(op, ": filter ", filter.describe(),
                                     " must be [filter spatial (1 to 3)..., in_channels, "
                                     "out_channels]"));
  }
  ops::require_float(op, filter);
  if (filter.dtype() != x.dtype()) {
    throw DTypeError(detail::str_cat(op, ": the filter ", filter.describe(), " is ",
                                     dtype_name(filter.dtype()), " but the input ", x.describe(),
                                     " is ", dtype_name(x.dtype()),
                                     "; cast one (layers read weights in the input's dtype)"));
  }
  const Dimension& xc = x.shape()[x.shape().ndims() - 1];
  if (w[x_channel_at] != xc) {
    throw ShapeError(detail::str_cat(op, ": the input's channel dimension ", xc.to_string(),
                                     " (its last) must be dimension ", x_channel_at,
                                     " of the filter ", filter.describe()));
  }
  for (int i = 0; i < n; ++i) {
    if (x.shape().contains(w[i].name)) {
      throw ShapeError(detail::str_cat(op, ": filter dimension \"", w[i].name,
                                       "\" is also a dimension of the input ", x.describe(),
                                       "; name the filter's spatial dimensions apart"));
    }
  }
  const Dimension& other = w[x_channel_at == n ? n + 1 : n];
  if (x.shape().contains(other.name)) {
    throw ShapeError(detail::str_cat(op, ": the filter's output channel dimension \"", other.name,
                                     "\" is also a dimension of the input ", x.describe(),
                                     "; give it another name"));
  }
}

std::vector<int64_t> filter_sizes(const Tensor& filter, int n) {
  std::vector<int64_t> k;
  for (int i = 0; i < n; ++i) k.push_back(filter.shape()[i].size);
  return k;
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& filter, const std::vector<int64_t>& strides,
            const std::string& padding, const std::vector<int64_t>& dilations,
            const std::string& name) {
  const int n = filter.shape().ndims() - 2;
  check_filter("conv", x, filter, n, n);
  const ConvSpec spec = spec_of("conv", x, n, filter_sizes(filter, n), strides, dilations, padding);
  return x.graph().add<ConvOp>(x, filter, spec, name)->output(0);
}

Tensor conv_transpose(const Tensor& x, const Tensor& filter, const std::vector<int64_t>& strides,
                      const std::string& padding, const std::vector<int64_t>& dilations,
                      const std::string& name) {
  const std::string op = "conv_transpose";
  const int n = filter.shape().ndims() - 2;
  check_filter(op, x, filter, n, n + 1);
  if (x.shape().ndims() < n + 1) {
    throw ShapeError(detail::str_cat(op, ": input ", x.describe(), " needs ", n,
                                     " spatial dimensions and a channel dimension (last)"));
  }
  ops::require_float(op, x);
  const bool same = is_same_padding(op, padding);
  const std::vector<int64_t> s = per_axis("strides", op, strides, n);
  const std::vector<int64_t> d = per_axis("dilations", op, dilations, n);
  const std::vector<int64_t> k = filter_sizes(filter, n);
  // The convolution whose input gradient this is: its input (our output)
  // is in * stride long (SAME) or in * stride + max(span - stride, 0) (VALID).
  ConvSpec spec;
  for (int i = 0; i < n; ++i) {
    const Dimension& dim = x.shape()[x.shape().ndims() - n - 1 + i];
    const int64_t span = (k[i] - 1) * d[i] + 1;
    const int64_t out =
        same ? dim.size * s[i] : dim.size * s[i] + std::max<int64_t>(span - s[i], 0);
    ConvAxis a = forward_axis(op, {dim.name, out}, k[i], s[i], d[i], same);
    MTF_CHECK(a.y_size == dim.size);
    spec.names.push_back(dim.name);
    spec.axes.push_back(a);
  }
  const Shape x_shape = side_shape(x.shape(), n, spec.names, x_sizes(spec), filter.shape()[n]);
  return make_input_grad(x, filter, spec, x_shape, op, name);
}

namespace {

Tensor pool(kernels::PoolFn fn, const Tensor& x, const std::vector<int64_t>& ksize,
            const std::vector<int64_t>& strides, const std::string& padding,
            const std::string& name) {
  const std::string op = fn == kernels::PoolFn::kMax ? "max_pool" : "avg_pool";
  const int n = static_cast<int>(ksize.size());
  if (n < 1 || n > 3) {
    throw ValueError(detail::str_cat(op, ": ", n,
                                     " window sizes; give 1 to 3 (one per spatial "
                                     "dimension, the dimensions before the last of x)"));
  }
  const std::vector<int64_t> k = per_axis("window sizes", op, ksize, n);
  const ConvSpec spec = spec_of(op, x, n, k, strides.empty() ? k : strides, {}, padding);
  return x.graph().add<PoolOp>(fn, x, spec, name)->output(0);
}

}  // namespace

Tensor max_pool(const Tensor& x, const std::vector<int64_t>& ksize,
                const std::vector<int64_t>& strides, const std::string& padding,
                const std::string& name) {
  return pool(kernels::PoolFn::kMax, x, ksize, strides, padding, name);
}

Tensor avg_pool(const Tensor& x, const std::vector<int64_t>& ksize,
                const std::vector<int64_t>& strides, const std::string& padding,
                const std::string& name) {
  return pool(kernels::PoolFn::kAvg, x, ksize, strides, padding, name);
}

}  // namespace mtf
