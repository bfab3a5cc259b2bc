// conv.h — convolution and pooling kernels over 1 to 3 spatial axes.
// Internal.
//
// Tensors are channels-last slices: x [batch..., X..., Cx], y [batch...,
// Y..., Cy], filter [K..., Cx, Cy] (the batch dimensions fold into one).
// Every kernel works in the logical tensors' coordinates: a slice may be any
// block of x or y along a spatial axis, or a window reaching past its ends
// (a halo), and `*_begin` says where it starts. Output position o of an
// axis reads input position o * stride + j * dilation - pad_before for tap
// j; positions outside [0, x_size) are the zero padding (ignored by max and
// average pooling, as TensorFlow's SAME pooling ignores them).
//
// Each output element sums its terms in one order whatever the slicing: the
// forward and input-gradient GEMMs are per row, the input gradient adds the
// contributions of output positions in increasing order, and with
// fixed_order the GEMMs are sgemm_fixed_order. The filter gradient sums over
// rows in chunks of a fixed size, so it matches only when its rows (batch
// and spatial positions) are whole, as reproducible mode makes them.
#pragma once

#include <cstdint>
#include <vector>

#include "mtf/host_tensor.h"

namespace mtf::kernels {

// One spatial axis of a convolution: y[o] reads x[o * stride + j * dilation
// - pad_before] for j in [0, kernel).
struct ConvAxis {
  int64_t x_size = 1, y_size = 1, kernel = 1, stride = 1, dilation = 1, pad_before = 0;
};

// Where each slice starts along each spatial axis, in logical coordinates.
using SpatialBegin = std::vector<int64_t>;

// y = conv(x, w).
void conv_forward(const std::vector<ConvAxis>& axes, const HostTensor& x, const SpatialBegin& x_at,
                  const HostTensor& w, HostTensor& y, const SpatialBegin& y_at, bool fixed_order);
// dx = the gradient of conv_forward with respect to x for output gradient
// dy (also a transposed convolution of dy).
void conv_input_grad(const std::vector<ConvAxis>& axes, const HostTensor& dy,
                     const SpatialBegin& dy_at, const HostTensor& w, HostTensor& dx,
                     const SpatialBegin& dx_at, bool fixed_order);
// dw = the gradient of conv_forward with respect to w.
void conv_filter_grad(const std::vector<ConvAxis>& axes, const HostTensor& x,
                      const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
                      HostTensor& dw, bool fixed_order);

// Rows of im2col columns (output positions) of kc = taps x channels each
// that the kernels above pass to one product when they go through columns:
// a chunk that stays in cache. The simulator times a convolution by it.
int64_t conv_chunk_rows(int64_t kc, int64_t rows);

enum class PoolFn { kMax, kAvg };
// y [batch..., Y..., C] = max or mean of x's window per channel (the mean
// over the window's positions inside x).
void pool_forward(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor& x,
                  const SpatialBegin& x_at, HostTensor& y, const SpatialBegin& y_at);
// dx for output gradient dy: max routes each dy to its window's first
// largest x (x needed: pass a window holding every position dy's windows
// read); avg spreads it evenly (x unused).
void pool_grad(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor* x,
               const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
               HostTensor& dx, const SpatialBegin& dx_at);

}  // namespace mtf::kernels
