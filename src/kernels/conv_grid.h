// conv_grid.h — the geometry shared by the convolution and pooling kernels
// (conv.cc, pool.cc): one call's shapes over exactly three spatial axes
// (1-D and 2-D calls get leading unit axes), the tap tables that map each
// output position and tap to the input row it reads, and the line-by-line
// walk both kinds of kernel take. Internal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/conv.h"

namespace mtf::kernels::conv_grid {

constexpr int kAxes = 3;       // 1-D and 2-D convolutions get leading unit axes
constexpr int64_t kPad = -1;   // a tap on the zero padding
constexpr int64_t kAway = -2;  // a real position outside the slice at hand

// The shapes of one call, over exactly three spatial axes.
struct Grid {
  ConvAxis ax[kAxes];
  int64_t batch = 1, xc = 1, yc = 1;
  int64_t xl[kAxes] = {1, 1, 1}, yl[kAxes] = {1, 1, 1};
  int64_t xat[kAxes] = {0, 0, 0}, yat[kAxes] = {0, 0, 0};
  int64_t taps() const { return ax[0].kernel * ax[1].kernel * ax[2].kernel; }
  int64_t y_rows() const { return batch * yl[0] * yl[1] * yl[2]; }
};

// The call's grid from x's and y's slice shapes and where they start.
Grid make_grid(const std::vector<ConvAxis>& axes, const Shape& x, const SpatialBegin& x_at,
               const Shape& y, const SpatialBegin& y_at);

// Per axis, for local output position o and tap j (entry o * kernel + j):
// the local index of the input position read within a slice of `len` rows
// starting at `at` (per axis), kPad on the padding, kAway outside the slice.
// With must_hold, a real position outside the slice is a bug in the windows
// (an InternalError).
struct Tables {
  std::vector<int64_t> t[kAxes];
};

Tables tables(const Grid& g, const int64_t* at, const int64_t* len, bool must_hold);

// Output row r's batch index and local spatial position.
struct Row {
  int64_t b, o[kAxes];
};
inline Row decode(const Grid& g, int64_t r) {
  Row w;
  w.o[2] = r % g.yl[2];
  r /= g.yl[2];
  w.o[1] = r % g.yl[1];
  r /= g.yl[1];
  w.o[0] = r % g.yl[0];
  w.b = r / g.yl[0];
  return w;
}

// Calls f(r, line, first, last) for each run of output rows [r, r + last -
// first) of [r0, r0 + n) that share a batch index and positions o0, o1 (a
// line along axis 2): `line` holds those, and the run's axis-2 positions
// are [first, last).
template <typename F>
void for_each_line(const Grid& g, int64_t r0, int64_t n, F f) {
  const int64_t len = g.yl[2];
  for (int64_t r = r0; r < r0 + n;) {
    const int64_t first = r % len, last = std::min(len, first + (r0 + n - r));
    const Row w = decode(g, r - first);
    f(r, w, first, last);
    r += last - first;
  }
}

// The rows [lo, hi) of a line whose output positions lie inside y (a
// window of dy may reach past its ends: those rows are zeros); empty when
// the line itself lies outside.
std::pair<int64_t, int64_t> inside_part(const Grid& g, const Row& line, int64_t first,
                                        int64_t last);

// Where input row (a, b) of tap row (j0, j1) of `line` starts in a slice
// of lengths `len` (in positions: multiply by the channels), or -1 on the
// padding or outside the slice.
int64_t tap_row(const Grid& g, const Tables& tb, const Row& line, const int64_t* len, int64_t j0,
                int64_t j1);

// Calls f(j0, j1, tap_row(...)) for the tap rows of `line` in order.
template <typename F>
void for_each_tap_row(const Grid& g, const Tables& tb, const Row& line, const int64_t* len, F f) {
  for (int64_t j0 = 0; j0 < g.ax[0].kernel; ++j0)
    for (int64_t j1 = 0; j1 < g.ax[1].kernel; ++j1) f(j0, j1, tap_row(g, tb, line, len, j0, j1));
}

// Throws a DTypeError naming `kernel` unless t is float32.
void require_float32(const HostTensor& t, const char* kernel);

}  // namespace mtf::kernels::conv_grid
