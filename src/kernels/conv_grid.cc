#include "kernels/conv_grid.h"

#include <algorithm>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::kernels::conv_grid {
namespace {

// Batch size, spatial lengths and channels of a [batch..., S..., C] slice.
void split_shape(const Shape& s, int n, int64_t* batch, int64_t* len, int64_t* channels) {
  MTF_CHECK(s.ndims() >= n + 1);
  *batch = 1;
  for (int i = 0; i < s.ndims() - n - 1; ++i) *batch *= s[i].size;
  for (int i = 0; i < n; ++i) len[kAxes - n + i] = s[s.ndims() - n - 1 + i].size;
  *channels = s[s.ndims() - 1].size;
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

}  // namespace

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

Tables tables(const Grid& g, const int64_t* at, const int64_t* len, bool must_hold) {
  Tables r;
  for (int a = 0; a < kAxes; ++a)
    r.t[a] = tap_table(g.ax[a], g.yat[a], g.yl[a], at[a], len[a], must_hold);
  return r;
}

std::pair<int64_t, int64_t> inside_part(const Grid& g, const Row& line, int64_t first,
                                        int64_t last) {
  for (int a = 0; a < 2; ++a) {
    const int64_t o = g.yat[a] + line.o[a];
    if (o < 0 || o >= g.ax[a].y_size) return {0, 0};
  }
  return {std::max(first, -g.yat[2]), std::min(last, g.ax[2].y_size - g.yat[2])};
}

int64_t tap_row(const Grid& g, const Tables& tb, const Row& line, const int64_t* len, int64_t j0,
                int64_t j1) {
  const int64_t a = tb.t[0][line.o[0] * g.ax[0].kernel + j0];
  const int64_t b = tb.t[1][line.o[1] * g.ax[1].kernel + j1];
  return a < 0 || b < 0 ? -1 : ((line.b * len[0] + a) * len[1] + b) * len[2];
}

void require_float32(const HostTensor& t, const char* kernel) {
  if (t.dtype() != float32) {
    throw DTypeError(detail::str_cat(kernel, ": needs float32, got ", dtype_name(t.dtype())));
  }
}

}  // namespace mtf::kernels::conv_grid
