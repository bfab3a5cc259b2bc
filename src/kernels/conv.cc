// Convolutions by im2col and GEMM; pooling by direct loops. See conv.h.
#include "kernels/conv.h"

#include <cblas.h>

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "kernels/gemm_fixed_order.h"
#include "mtf/errors.h"

namespace mtf::kernels {
namespace {

constexpr int kAxes = 3;       // 1-D and 2-D convolutions get leading unit axes
constexpr int64_t kPad = -1;   // a tap on the zero padding
constexpr int64_t kAway = -2;  // a real position outside the slice at hand
constexpr int64_t kChunkFloats = int64_t{1} << 21;  // im2col buffer: 8 MiB
constexpr int64_t kFixedChunkRows = 256;            // filter gradient's row chunks

// The shapes of one call, over exactly three spatial axes.
struct Grid {
  ConvAxis ax[kAxes];
  int64_t batch = 1, xc = 1, yc = 1;
  int64_t xl[kAxes] = {1, 1, 1}, yl[kAxes] = {1, 1, 1};
  int64_t xat[kAxes] = {0, 0, 0}, yat[kAxes] = {0, 0, 0};
  int64_t taps() const { return ax[0].kernel * ax[1].kernel * ax[2].kernel; }
  int64_t y_rows() const { return batch * yl[0] * yl[1] * yl[2]; }
  int64_t x_rows_per_batch() const { return xl[0] * xl[1] * xl[2]; }
};

// Batch size, spatial lengths and channels of a [batch..., S..., C] slice.
void split_shape(const Shape& s, int n, int64_t* batch, int64_t* len, int64_t* channels) {
  MTF_CHECK(s.ndims() >= n + 1);
  *batch = 1;
  for (int i = 0; i < s.ndims() - n - 1; ++i) *batch *= s[i].size;
  for (int i = 0; i < n; ++i) len[kAxes - n + i] = s[s.ndims() - n - 1 + i].size;
  *channels = s[s.ndims() - 1].size;
}

Grid make_grid(const std::vector<ConvAxis>& axes, const Shape& x, const SpatialBegin& x_at,
               const Shape& y, const SpatialBegin& y_at) {
  const int n = static_cast<int>(axes.size());
  MTF_CHECK(n >= 1 && n <= kAxes && static_cast<int>(x_at.size()) == n &&
            static_cast<int>(y_at.size()) == n);
  Grid g;
  int64_t yb = 0;
  split_shape(x, n, &g.batch, g.xl, &g.xc);
  split_shape(y, n, &yb, g.yl, &g.yc);
  MTF_CHECK(yb == g.batch);
  for (int i = 0; i < n; ++i) {
    g.ax[kAxes - n + i] = axes[i];
    g.xat[kAxes - n + i] = x_at[i];
    g.yat[kAxes - n + i] = y_at[i];
  }
  return g;
}

// Per axis, for local output position o and tap j (entry o * kernel + j):
// the local index of the input position read within a slice of `len` rows
// starting at `at`, kPad on the padding, kAway outside the slice. With
// must_hold, a real position outside the slice is a bug in the windows.
std::vector<int64_t> tap_table(const ConvAxis& a, int64_t y_at, int64_t y_len, int64_t at,
                               int64_t len, bool must_hold) {
  std::vector<int64_t> t(y_len * a.kernel);
  for (int64_t o = 0; o < y_len; ++o) {
    for (int64_t j = 0; j < a.kernel; ++j) {
      const int64_t pos = (y_at + o) * a.stride + j * a.dilation - a.pad_before;
      int64_t v = kPad;
      if (pos >= 0 && pos < a.x_size) {
        v = pos - at;
        if (v < 0 || v >= len) {
          if (must_hold) {
            throw InternalError(detail::str_cat("convolution window misses input position ", pos,
                                                " (slice of ", len, " rows at ", at, ")"));
          }
          v = kAway;
        }
      }
      t[o * a.kernel + j] = v;
    }
  }
  return t;
}

struct Tables {
  std::vector<int64_t> t[kAxes];
};

Tables tables(const Grid& g, const int64_t* at, const int64_t* len, bool must_hold) {
  Tables r;
  for (int a = 0; a < kAxes; ++a)
    r.t[a] = tap_table(g.ax[a], g.yat[a], g.yl[a], at[a], len[a], must_hold);
  return r;
}

// Output row r's batch index and local spatial position.
struct Row {
  int64_t b, o[kAxes];
};
Row decode(const Grid& g, int64_t r) {
  Row w;
  w.o[2] = r % g.yl[2];
  r /= g.yl[2];
  w.o[1] = r % g.yl[1];
  r /= g.yl[1];
  w.o[0] = r % g.yl[0];
  w.b = r / g.yl[0];
  return w;
}

// True when row w's output position lies inside y (a window of dy may
// reach past its ends: those rows are zeros and read nothing).
bool row_inside(const Grid& g, const Row& w) {
  for (int a = 0; a < kAxes; ++a) {
    const int64_t o = g.yat[a] + w.o[a];
    if (o < 0 || o >= g.ax[a].y_size) return false;
  }
  return true;
}

// Calls f(tap, local input index or kPad / kAway) for every tap of a row,
// taps in row-major order of (j0, j1, j2).
template <typename F>
void for_each_tap(const Grid& g, const Tables& tb, const Row& w, const int64_t* len, F f) {
  const int64_t k0 = g.ax[0].kernel, k1 = g.ax[1].kernel, k2 = g.ax[2].kernel;
  const int64_t* t0 = tb.t[0].data() + w.o[0] * k0;
  const int64_t* t1 = tb.t[1].data() + w.o[1] * k1;
  const int64_t* t2 = tb.t[2].data() + w.o[2] * k2;
  int64_t tap = 0;
  for (int64_t j0 = 0; j0 < k0; ++j0) {
    for (int64_t j1 = 0; j1 < k1; ++j1) {
      for (int64_t j2 = 0; j2 < k2; ++j2, ++tap) {
        const int64_t a = t0[j0], b = t1[j1], c = t2[j2];
        if (a == kPad || b == kPad || c == kPad) {
          f(tap, kPad);
        } else if (a == kAway || b == kAway || c == kAway) {
          f(tap, kAway);
        } else {
          f(tap, w.b * len[0] * len[1] * len[2] + (a * len[1] + b) * len[2] + c);
        }
      }
    }
  }
}

// Rows [r0, r0 + n) of the im2col matrix of x: [n, taps * xc].
void im2col(const Grid& g, const Tables& tb, const float* x, int64_t r0, int64_t n, float* cols) {
  const int64_t c = g.xc, kc = g.taps() * c;
  for (int64_t i = 0; i < n; ++i) {
    float* row = cols + i * kc;
    for_each_tap(g, tb, decode(g, r0 + i), g.xl, [&](int64_t tap, int64_t at) {
      float* dst = row + tap * c;
      if (at < 0) {
        std::fill(dst, dst + c, 0.f);
      } else {
        std::copy(x + at * c, x + at * c + c, dst);
      }
    });
  }
}

void gemm(bool fixed_order, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (fixed_order) {
    MTF_CHECK(beta == 0.f);
    sgemm_fixed_order(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

int64_t chunk_rows(int64_t kc, int64_t rows) {
  return std::max<int64_t>(1, std::min(rows, kChunkFloats / std::max<int64_t>(1, kc)));
}

void require_float32(const HostTensor& t, const char* kernel) {
  if (t.dtype() != float32) {
    throw DTypeError(detail::str_cat(kernel, ": needs float32, got ", dtype_name(t.dtype())));
  }
}

}  // namespace

void conv_forward(const std::vector<ConvAxis>& axes, const HostTensor& x, const SpatialBegin& x_at,
                  const HostTensor& w, HostTensor& y, const SpatialBegin& y_at, bool fixed_order) {
  require_float32(x, "conv");
  const Grid g = make_grid(axes, x.shape(), x_at, y.shape(), y_at);
  const Tables tb = tables(g, g.xat, g.xl, true);
  const int64_t kc = g.taps() * g.xc, rows = g.y_rows();
  MTF_CHECK(w.num_elements() == kc * g.yc);
  const int64_t chunk = chunk_rows(kc, rows);
  std::vector<float> cols(chunk * kc);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    im2col(g, tb, x.data<float>(), r0, n, cols.data());
    gemm(fixed_order, false, false, n, g.yc, kc, cols.data(), kc, w.data<float>(), g.yc, 0.f,
         y.data<float>() + r0 * g.yc, g.yc);
  }
}

void conv_input_grad(const std::vector<ConvAxis>& axes, const HostTensor& dy,
                     const SpatialBegin& dy_at, const HostTensor& w, HostTensor& dx,
                     const SpatialBegin& dx_at, bool fixed_order) {
  require_float32(dy, "conv_input_grad");
  const Grid g = make_grid(axes, dx.shape(), dx_at, dy.shape(), dy_at);
  const Tables tb = tables(g, g.xat, g.xl, false);
  const int64_t c = g.xc, kc = g.taps() * c, rows = g.y_rows();
  MTF_CHECK(w.num_elements() == kc * g.yc);
  float* out = dx.data<float>();
  std::fill(out, out + dx.num_elements(), 0.f);
  const int64_t chunk = chunk_rows(kc, rows);
  std::vector<float> cols(chunk * kc);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    gemm(fixed_order, false, true, n, kc, g.yc, dy.data<float>() + r0 * g.yc, g.yc, w.data<float>(),
         g.yc, 0.f, cols.data(), kc);
    for (int64_t i = 0; i < n; ++i) {
      const float* row = cols.data() + i * kc;
      const Row w = decode(g, r0 + i);
      if (!row_inside(g, w)) continue;
      for_each_tap(g, tb, w, g.xl, [&](int64_t tap, int64_t at) {
        if (at < 0) return;
        float* dst = out + at * c;
        const float* src = row + tap * c;
        for (int64_t k = 0; k < c; ++k) dst[k] += src[k];
      });
    }
  }
}

void conv_filter_grad(const std::vector<ConvAxis>& axes, const HostTensor& x,
                      const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
                      HostTensor& dw, bool fixed_order) {
  require_float32(x, "conv_filter_grad");
  const Grid g = make_grid(axes, x.shape(), x_at, dy.shape(), dy_at);
  const Tables tb = tables(g, g.xat, g.xl, true);
  const int64_t kc = g.taps() * g.xc, rows = g.y_rows();
  MTF_CHECK(dw.num_elements() == kc * g.yc);
  float* out = dw.data<float>();
  if (rows == 0) {
    std::fill(out, out + dw.num_elements(), 0.f);
    return;
  }
  const int64_t chunk = fixed_order ? kFixedChunkRows : chunk_rows(kc, rows);
  std::vector<float> cols(std::min(chunk, rows) * kc);
  std::vector<float> part(fixed_order ? dw.num_elements() : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    im2col(g, tb, x.data<float>(), r0, n, cols.data());
    const float* d = dy.data<float>() + r0 * g.yc;
    if (!fixed_order) {
      gemm(false, true, false, kc, g.yc, n, cols.data(), kc, d, g.yc, r0 ? 1.f : 0.f, out, g.yc);
      continue;
    }
    float* target = r0 ? part.data() : out;
    gemm(true, true, false, kc, g.yc, n, cols.data(), kc, d, g.yc, 0.f, target, g.yc);
    if (r0) {
      for (size_t i = 0; i < part.size(); ++i) out[i] += part[i];
    }
  }
}

void pool_forward(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor& x,
                  const SpatialBegin& x_at, HostTensor& y, const SpatialBegin& y_at) {
  require_float32(x, "pool");
  const Grid g = make_grid(axes, x.shape(), x_at, y.shape(), y_at);
  MTF_CHECK(g.xc == g.yc);
  const Tables tb = tables(g, g.xat, g.xl, true);
  const int64_t c = g.xc, rows = g.y_rows();
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = out + r * c;
    std::fill(dst, dst + c, fn == PoolFn::kMax ? -std::numeric_limits<float>::infinity() : 0.f);
    int64_t count = 0;
    for_each_tap(g, tb, decode(g, r), g.xl, [&](int64_t, int64_t at) {
      if (at < 0) return;
      ++count;
      const float* src = in + at * c;
      if (fn == PoolFn::kMax) {
        for (int64_t k = 0; k < c; ++k) dst[k] = src[k] > dst[k] ? src[k] : dst[k];
      } else {
        for (int64_t k = 0; k < c; ++k) dst[k] += src[k];
      }
    });
    if (fn == PoolFn::kAvg && count > 0) {
      const float inv = static_cast<float>(count);
      for (int64_t k = 0; k < c; ++k) dst[k] /= inv;
    }
  }
}

void pool_grad(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor* x,
               const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
               HostTensor& dx, const SpatialBegin& dx_at) {
  require_float32(dy, "pool_grad");
  const Grid g = make_grid(axes, dx.shape(), dx_at, dy.shape(), dy_at);
  MTF_CHECK(g.xc == g.yc);
  const int64_t c = g.xc, rows = g.y_rows();
  const Tables to_dx = tables(g, g.xat, g.xl, false);
  float* out = dx.data<float>();
  std::fill(out, out + dx.num_elements(), 0.f);
  const float* d = dy.data<float>();
  if (fn == PoolFn::kAvg) {
    for (int64_t r = 0; r < rows; ++r) {
      const Row w = decode(g, r);
      if (!row_inside(g, w)) continue;
      int64_t count = 0;
      for_each_tap(g, to_dx, w, g.xl, [&](int64_t, int64_t at) { count += at != kPad; });
      if (count == 0) continue;
      const float inv = static_cast<float>(count);
      for_each_tap(g, to_dx, w, g.xl, [&](int64_t, int64_t at) {
        if (at < 0) return;
        for (int64_t k = 0; k < c; ++k) out[at * c + k] += d[r * c + k] / inv;
      });
    }
    return;
  }
  // Max: the window of x (its own begin and lengths) finds each argmax.
  MTF_CHECK(x != nullptr);
  require_float32(*x, "pool_grad");
  Grid gx = make_grid(axes, x->shape(), x_at, dy.shape(), dy_at);
  const Tables in_x = tables(gx, gx.xat, gx.xl, true);
  const float* xv = x->data<float>();
  std::vector<float> best(c);
  std::vector<int64_t> best_tap(c);
  std::vector<int64_t> dx_of_tap(g.taps());
  for (int64_t r = 0; r < rows; ++r) {
    const Row w = decode(g, r);
    if (!row_inside(g, w)) continue;
    std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
    std::fill(best_tap.begin(), best_tap.end(), int64_t{-1});
    for_each_tap(gx, in_x, w, gx.xl, [&](int64_t tap, int64_t at) {
      if (at < 0) return;
      const float* src = xv + at * c;
      for (int64_t k = 0; k < c; ++k) {
        if (best_tap[k] < 0 || src[k] > best[k]) {
          best[k] = src[k];
          best_tap[k] = tap;
        }
      }
    });
    for_each_tap(g, to_dx, w, g.xl, [&](int64_t tap, int64_t at) { dx_of_tap[tap] = at; });
    for (int64_t k = 0; k < c; ++k) {
      if (best_tap[k] < 0) continue;
      const int64_t at = dx_of_tap[best_tap[k]];
      if (at >= 0) out[at * c + k] += d[r * c + k];
    }
  }
}

}  // namespace mtf::kernels
