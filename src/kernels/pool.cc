// Pooling by direct loops, line by line. See conv.h.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/check.h"
#include "kernels/conv.h"
#include "kernels/conv_grid.h"

namespace mtf::kernels {
namespace {

using namespace conv_grid;

// Taps of a table row that are real positions (inside x or not).
int64_t real_taps(const std::vector<int64_t>& t, int64_t o, int64_t k) {
  int64_t n = 0;
  for (int64_t j = 0; j < k; ++j) n += t[o * k + j] != kPad;
  return n;
}

}  // namespace

void pool_forward(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor& x,
                  const SpatialBegin& x_at, HostTensor& y, const SpatialBegin& y_at) {
  require_float32(x, "pool");
  const Grid g = make_grid(axes, x.shape(), x_at, y.shape(), y_at);
  MTF_CHECK(g.xc == g.yc);
  const Tables tb = tables(g, g.xat, g.xl, true);
  const int64_t c = g.xc, k2 = g.ax[2].kernel;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const int64_t* t2 = tb.t[2].data();
  std::vector<int64_t> count(g.yl[2]);
  // Line by line; each output element meets its taps in (j0, j1, j2) order.
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    float* y_line = out + (r - first) * c;
    std::fill(y_line + first * c, y_line + last * c,
              fn == PoolFn::kMax ? -std::numeric_limits<float>::infinity() : 0.f);
    std::fill(count.begin(), count.end(), 0);
    for_each_tap_row(g, tb, line, g.xl, [&](int64_t, int64_t, int64_t row) {
      if (row < 0) return;
      const float* src = in + row * c;
      for (int64_t o2 = first; o2 < last; ++o2) {
        float* dst = y_line + o2 * c;
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          const int64_t at = t2[o2 * k2 + j2];
          if (at < 0) continue;
          ++count[o2];
          const float* v = src + at * c;
          if (fn == PoolFn::kMax) {
            for (int64_t k = 0; k < c; ++k)
              dst[k] = v[k] > dst[k] || v[k] != v[k] ? v[k] : dst[k];  // NaN wins
          } else {
            for (int64_t k = 0; k < c; ++k) dst[k] += v[k];
          }
        }
      }
    });
    if (fn != PoolFn::kAvg) return;
    for (int64_t o2 = first; o2 < last; ++o2) {
      if (count[o2] == 0) continue;
      const float inv = static_cast<float>(count[o2]);
      for (int64_t k = 0; k < c; ++k) y_line[o2 * c + k] /= inv;
    }
  });
}

namespace {

// dx of average pooling: dy spread evenly over each window's positions.
void avg_pool_grad(const Grid& g, const Tables& to_dx, const HostTensor& dy, HostTensor& dx) {
  const int64_t c = g.xc, k0 = g.ax[0].kernel, k1 = g.ax[1].kernel, k2 = g.ax[2].kernel;
  float* out = dx.data<float>();
  const float* d = dy.data<float>();
  const int64_t* t2 = to_dx.t[2].data();
  std::fill(out, out + dx.num_elements(), 0.f);
  // Each dx element gets its terms in row order: within a line one (j0,
  // j1) reaches it, and positions go in order.
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    const std::pair<int64_t, int64_t> part = inside_part(g, line, first, last);
    const int64_t lo = part.first, hi = part.second;
    const int64_t n01 = real_taps(to_dx.t[0], line.o[0], k0) * real_taps(to_dx.t[1], line.o[1], k1);
    const float* d_line = d + (r - first) * c;
    for_each_tap_row(g, to_dx, line, g.xl, [&](int64_t, int64_t, int64_t row) {
      if (row < 0) return;
      float* dst = out + row * c;
      for (int64_t o2 = lo; o2 < hi; ++o2) {
        const int64_t count = n01 * real_taps(to_dx.t[2], o2, k2);
        if (count == 0) continue;
        const float inv = static_cast<float>(count);
        const float* dv = d_line + o2 * c;
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          const int64_t at = t2[o2 * k2 + j2];
          if (at < 0) continue;
          for (int64_t k = 0; k < c; ++k) dst[at * c + k] += dv[k] / inv;
        }
      }
    });
  });
}

// dx of max pooling: the window of x (its own begin and lengths) finds each
// argmax, the first largest in tap order; dy then goes to that tap's dx
// element.
void max_pool_grad(const std::vector<ConvAxis>& axes, const Grid& g, const Tables& to_dx,
                   const HostTensor& x, const SpatialBegin& x_at, const HostTensor& dy,
                   const SpatialBegin& dy_at, HostTensor& dx) {
  const int64_t c = g.xc, k0 = g.ax[0].kernel, k1 = g.ax[1].kernel, k2 = g.ax[2].kernel;
  float* out = dx.data<float>();
  const float* d = dy.data<float>();
  const int64_t* t2 = to_dx.t[2].data();
  const Grid gx = make_grid(axes, x.shape(), x_at, dy.shape(), dy_at);
  const Tables in_x = tables(gx, gx.xat, gx.xl, true);
  const float* xv = x.data<float>();
  const int64_t* tx2 = in_x.t[2].data();
  const int64_t len = g.yl[2], taps = k0 * k1 * k2;
  // Per position and channel: the largest x so far and its tap (j0, j1,
  // j2 in row-major order; kNone before any). Per position and tap: where
  // that tap's gradient goes, an offset into dx (plus the channel), or
  // kOutside when the position is not in dx's slice. Taps as small
  // integers keep the search over channels in vector registers.
  constexpr int32_t kNone = -1;
  constexpr int64_t kOutside = -1;
  std::vector<float> best(len * c);
  std::vector<int32_t> tap(len * c);
  std::vector<int64_t> target(len * taps);
  // dx is zeroed just ahead of the lines that add to it, while it is in
  // cache: the dx rows a line reaches never end before the previous line's
  // do (lines and rows both go in row-major order).
  int64_t zeroed = 0;
  auto zero_up_to = [&](int64_t end) {
    if (end <= zeroed) return;
    std::fill(out + zeroed, out + end, 0.f);
    zeroed = end;
  };
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    const std::pair<int64_t, int64_t> part = inside_part(g, line, first, last);
    const int64_t lo = part.first, hi = part.second;
    if (lo >= hi) return;
    std::fill(best.begin() + lo * c, best.begin() + hi * c,
              -std::numeric_limits<float>::infinity());
    std::fill(tap.begin() + lo * c, tap.begin() + hi * c, kNone);
    std::fill(target.begin() + lo * taps, target.begin() + hi * taps, kOutside);
    int64_t last_row = -1;
    for_each_tap_row(gx, in_x, line, gx.xl, [&](int64_t j0, int64_t j1, int64_t x_row) {
      if (x_row < 0) return;
      const float* src = xv + x_row * c;
      const int64_t dx_row = tap_row(g, to_dx, line, g.xl, j0, j1);
      last_row = std::max(last_row, dx_row);
      const int64_t row_tap = (j0 * k1 + j1) * k2;
      for (int64_t o2 = lo; o2 < hi; ++o2) {
        float* __restrict bv = best.data() + o2 * c;
        int32_t* __restrict bt = tap.data() + o2 * c;
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          const int64_t at = tx2[o2 * k2 + j2];
          if (at < 0) continue;
          const float* __restrict v = src + at * c;
          const int64_t to = t2[o2 * k2 + j2];
          const int32_t t = static_cast<int32_t>(row_tap + j2);
          target[o2 * taps + t] = dx_row >= 0 && to >= 0 ? (dx_row + to) * c : kOutside;
          for (int64_t k = 0; k < c; ++k) {
            const bool take = bt[k] == kNone || v[k] > bv[k];
            bv[k] = take ? v[k] : bv[k];
            bt[k] = take ? t : bt[k];
          }
        }
      }
    });
    if (last_row >= 0) zero_up_to((last_row + g.xl[2]) * c);
    // Tap by tap, so that each pass adds a whole row of channels (the
    // other taps' channels add zero).
    const float* d_line = d + (r - first) * c;
    for (int64_t o2 = lo; o2 < hi; ++o2) {
      const int32_t* __restrict bt = tap.data() + o2 * c;
      const float* __restrict dv = d_line + o2 * c;
      for (int32_t t = 0; t < taps; ++t) {
        const int64_t to = target[o2 * taps + t];
        if (to == kOutside) continue;
        float* __restrict dst = out + to;
        for (int64_t k = 0; k < c; ++k) dst[k] += bt[k] == t ? dv[k] : 0.f;
      }
    }
  });
  zero_up_to(dx.num_elements());
}

}  // namespace

void pool_grad(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor* x,
               const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
               HostTensor& dx, const SpatialBegin& dx_at) {
  require_float32(dy, "pool_grad");
  const Grid g = make_grid(axes, dx.shape(), dx_at, dy.shape(), dy_at);
  MTF_CHECK(g.xc == g.yc);
  const Tables to_dx = tables(g, g.xat, g.xl, false);
  if (fn == PoolFn::kAvg) return avg_pool_grad(g, to_dx, dy, dx);
  MTF_CHECK(x != nullptr);
  require_float32(*x, "pool_grad");
  max_pool_grad(axes, g, to_dx, *x, x_at, dy, dy_at, dx);
}

}  // namespace mtf::kernels
