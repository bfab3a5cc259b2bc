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

void pool_grad(PoolFn fn, const std::vector<ConvAxis>& axes, const HostTensor* x,
               const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
               HostTensor& dx, const SpatialBegin& dx_at) {
  require_float32(dy, "pool_grad");
  const Grid g = make_grid(axes, dx.shape(), dx_at, dy.shape(), dy_at);
  MTF_CHECK(g.xc == g.yc);
  const int64_t c = g.xc, k0 = g.ax[0].kernel, k1 = g.ax[1].kernel, k2 = g.ax[2].kernel;
  const Tables to_dx = tables(g, g.xat, g.xl, false);
  float* out = dx.data<float>();
  std::fill(out, out + dx.num_elements(), 0.f);
  const float* d = dy.data<float>();
  const int64_t* t2 = to_dx.t[2].data();
  if (fn == PoolFn::kAvg) {
    // Each dx element gets its terms in row order: within a line one (j0,
    // j1) reaches it, and positions go in order.
    for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
      const std::pair<int64_t, int64_t> part = inside_part(g, line, first, last);
      const int64_t lo = part.first, hi = part.second;
      const int64_t n01 =
          real_taps(to_dx.t[0], line.o[0], k0) * real_taps(to_dx.t[1], line.o[1], k1);
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
    return;
  }
  // Max: the window of x (its own begin and lengths) finds each argmax, the
  // first largest in tap order; dy then goes to that tap's dx element.
  MTF_CHECK(x != nullptr);
  require_float32(*x, "pool_grad");
  const Grid gx = make_grid(axes, x->shape(), x_at, dy.shape(), dy_at);
  const Tables in_x = tables(gx, gx.xat, gx.xl, true);
  const float* xv = x->data<float>();
  const int64_t* tx2 = in_x.t[2].data();
  const int64_t len = g.yl[2];
  // Per position and channel: the largest x so far and where its gradient
  // goes: an index into dx, kOutside when that position is not in dx's
  // slice, kNone before any tap.
  constexpr int64_t kNone = -2, kOutside = -1;
  std::vector<float> best(len * c);
  std::vector<int64_t> target(len * c);
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    const std::pair<int64_t, int64_t> part = inside_part(g, line, first, last);
    const int64_t lo = part.first, hi = part.second;
    if (lo >= hi) return;
    std::fill(best.begin() + lo * c, best.begin() + hi * c,
              -std::numeric_limits<float>::infinity());
    std::fill(target.begin() + lo * c, target.begin() + hi * c, kNone);
    for_each_tap_row(gx, in_x, line, gx.xl, [&](int64_t j0, int64_t j1, int64_t x_row) {
      if (x_row < 0) return;
      const float* src = xv + x_row * c;
      const int64_t dx_row = tap_row(g, to_dx, line, g.xl, j0, j1);
      for (int64_t o2 = lo; o2 < hi; ++o2) {
        float* bv = best.data() + o2 * c;
        int64_t* bt = target.data() + o2 * c;
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          const int64_t at = tx2[o2 * k2 + j2];
          if (at < 0) continue;
          const float* v = src + at * c;
          const int64_t to = t2[o2 * k2 + j2];
          const int64_t base = dx_row >= 0 && to >= 0 ? (dx_row + to) * c : kOutside;
          for (int64_t k = 0; k < c; ++k) {
            const bool take = bt[k] == kNone || v[k] > bv[k];
            bv[k] = take ? v[k] : bv[k];
            bt[k] = take ? (base == kOutside ? kOutside : base + k) : bt[k];
          }
        }
      }
    });
    const float* d_line = d + (r - first) * c;
    for (int64_t i = lo * c; i < hi * c; ++i) {
      if (target[i] >= 0) out[target[i]] += d_line[i];
    }
  });
}

}  // namespace mtf::kernels
