// Convolutions: im2col and GEMM, or the fixed-order GEMM's register tile fed
// directly for few columns. See conv.h; pooling is in pool.cc.
#include "kernels/conv.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

#include "core/check.h"
#include "kernels/blas_threads.h"
#include "kernels/conv_fold.h"
#include "kernels/conv_grid.h"
#include "kernels/gemm_fixed_order.h"
#include "kernels/transpose_panel.h"
#include "mtf/errors.h"

namespace mtf::kernels {
namespace {

using namespace conv_grid;

// The im2col buffer: 256 KiB, so that the GEMM reads it from L2.
constexpr int64_t kChunkFloats = int64_t{1} << 16;
constexpr int64_t kFixedChunkRows = 256;  // filter gradient's row chunks

// Axis 2's taps of output position o2 read kernel consecutive positions
// (dilation 1, none on the padding or outside the slice): one copy of
// kernel * channels floats serves them all.
std::vector<char> contiguous_runs(const Grid& g, const Tables& tb) {
  const int64_t k = g.ax[2].kernel;
  std::vector<char> run(g.yl[2]);
  for (int64_t o = 0; o < g.yl[2]; ++o) {
    const int64_t* t = tb.t[2].data() + o * k;
    bool ok = t[0] >= 0;
    for (int64_t j = 1; ok && j < k; ++j) ok = t[j] == t[0] + j;
    run[o] = ok;
  }
  return run;
}

// dst[0, n) = src[0, n) for the few floats of one output position's taps:
// two overlapping fixed-size moves instead of a loop of single floats.
inline void copy_small(float* dst, const float* src, int64_t n) {
  if (n >= 16) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (n >= 8) {
    std::memcpy(dst, src, 8 * sizeof(float));
    std::memcpy(dst + n - 8, src + n - 8, 8 * sizeof(float));
  } else if (n >= 4) {
    std::memcpy(dst, src, 4 * sizeof(float));
    std::memcpy(dst + n - 4, src + n - 4, 4 * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Rows [r0, r0 + n) of the im2col matrix of x: [n, taps * xc] with rows
// ld >= taps * xc apart (the columns past taps * xc untouched), columns in
// tap order (j0, j1, j2) then channel. Line by line: per (j0, j1) one input
// line, from which each output position copies its axis-2 taps.
void im2col(const Grid& g, const Tables& tb, const std::vector<char>& run, const float* x,
            int64_t r0, int64_t n, float* cols, int64_t ld) {
  const int64_t c = g.xc, kc = ld;
  const int64_t k1 = g.ax[1].kernel, k2 = g.ax[2].kernel, k2c = k2 * c;
  const int64_t* t2 = tb.t[2].data();
  for_each_line(g, r0, n, [&](int64_t r, const Row& w, int64_t first, int64_t last) {
    float* line_cols = cols + (r - r0 - first) * kc;  // row of o2 = 0
    for_each_tap_row(g, tb, w, g.xl, [&](int64_t j0, int64_t j1, int64_t row) {
      const int64_t col = (j0 * k1 + j1) * k2c;
      if (row < 0) {  // the padding: im2col's windows always hold x
        for (int64_t o2 = first; o2 < last; ++o2) {
          float* dst = line_cols + o2 * kc + col;
          std::fill(dst, dst + k2c, 0.f);
        }
        return;
      }
      const float* src = x + row * c;
      for (int64_t o2 = first; o2 < last; ++o2) {
        float* dst = line_cols + o2 * kc + col;
        const int64_t* t = t2 + o2 * k2;
        if (run[o2]) {
          copy_small(dst, src + t[0] * c, k2c);
          continue;
        }
        for (int64_t j2 = 0; j2 < k2; ++j2, dst += c) {
          if (t[j2] < 0) {
            std::fill(dst, dst + c, 0.f);
          } else {
            std::copy(src + t[j2] * c, src + t[j2] * c + c, dst);
          }
        }
      }
    });
  });
}

// dx += the im2col matrix `cols` of rows [r0, r0 + n) folded back onto
// the input positions they read (rows whose output position lies outside y
// are a window's zeros and add nothing). Each dx element receives its terms
// in increasing row order: within a line one (j0, j1) reaches it, and the
// lines and their positions go in order.
void col2im(const Grid& g, const Tables& tb, const std::vector<char>& run, const float* cols,
            int64_t r0, int64_t n, float* dx) {
  const int64_t c = g.xc, kc = g.taps() * c;
  const int64_t k1 = g.ax[1].kernel, k2 = g.ax[2].kernel, k2c = k2 * c;
  const int64_t* t2 = tb.t[2].data();
  for_each_line(g, r0, n, [&](int64_t r, const Row& w, int64_t first, int64_t last) {
    const float* line_cols = cols + (r - r0 - first) * kc;
    std::tie(first, last) = inside_part(g, w, first, last);
    for_each_tap_row(g, tb, w, g.xl, [&](int64_t j0, int64_t j1, int64_t row) {
      if (row < 0) return;
      const int64_t col = (j0 * k1 + j1) * k2c;
      float* dst = dx + row * c;
      for (int64_t o2 = first; o2 < last; ++o2) {
        const float* src = line_cols + o2 * kc + col;
        const int64_t* t = t2 + o2 * k2;
        if (run[o2]) {
          float* d = dst + t[0] * c;
          for (int64_t i = 0; i < k2c; ++i) d[i] += src[i];
          continue;
        }
        for (int64_t j2 = 0; j2 < k2; ++j2, src += c) {
          if (t[j2] < 0) continue;
          float* d = dst + t[j2] * c;
          for (int64_t i = 0; i < c; ++i) d[i] += src[i];
        }
      }
    });
  });
}

// A buffer of n floats, uninitialised, kept for the thread's next call (a
// fresh vector would clear it and, once large, fault its pages in anew).
float* scratch(size_t n) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// One channel: for a line of output positions [first, last) and each tap
// row (j0, j1), the input line with its zero padding written out, from the
// first position the line reads. Tap j2 of positions o2... is then the
// strided (stride 1: contiguous) slice of(j0, j1) + (o2 - first) * stride +
// j2 * dilation, whatever the borders. `slack` more positions read zeros.
struct PaddedLines {
  std::vector<float> data;
  int64_t len = 0, k1 = 1;
  void fill(const Grid& g, const Tables& tb, const float* x, const Row& line, int64_t first,
            int64_t last, int64_t slack) {
    const ConvAxis& ax2 = g.ax[2];
    const int64_t k0 = g.ax[0].kernel;
    k1 = g.ax[1].kernel;
    const int64_t lo = (g.yat[2] + first) * ax2.stride - ax2.pad_before;
    len = (last - first + slack) * ax2.stride + (ax2.kernel - 1) * ax2.dilation + 1;
    data.assign(k0 * k1 * len, 0.f);
    // Positions inside x (the window holds them all).
    const int64_t from = std::max<int64_t>(lo, 0), to = std::min(lo + len, ax2.x_size);
    for_each_tap_row(g, tb, line, g.xl, [&](int64_t j0, int64_t j1, int64_t row) {
      if (row < 0) return;
      const float* src = x + row;
      float* dst = data.data() + (j0 * k1 + j1) * len;
      for (int64_t pos = from; pos < to; ++pos) {
        const int64_t local = pos - g.xat[2];
        if (local >= 0 && local < g.xl[2]) dst[pos - lo] = src[local];
      }
    });
  }
  const float* of(int64_t j0, int64_t j1) const { return data.data() + (j0 * k1 + j1) * len; }
};

// One channel: rows [r0, r0 + n) of the im2col matrix transposed, colsT
// [taps, n] — per line and tap, one contiguous (stride 1) run of the padded
// line.
void im2col_transposed_one_channel(const Grid& g, const Tables& tb, const float* x, int64_t r0,
                                   int64_t n, float* cols_t, PaddedLines& padded) {
  const ConvAxis& ax2 = g.ax[2];
  const int64_t k0 = g.ax[0].kernel, k1 = g.ax[1].kernel, k2 = ax2.kernel;
  for_each_line(g, r0, n, [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    padded.fill(g, tb, x, line, first, last, 0);
    const int64_t count = last - first;
    for (int64_t j0 = 0; j0 < k0; ++j0) {
      for (int64_t j1 = 0; j1 < k1; ++j1) {
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          const float* src = padded.of(j0, j1) + j2 * ax2.dilation;
          float* dst = cols_t + ((j0 * k1 + j1) * k2 + j2) * n + (r - r0);
          if (ax2.stride == 1) {
            std::memcpy(dst, src, count * sizeof(float));
          } else {
            for (int64_t p = 0; p < count; ++p) dst[p] = src[p * ax2.stride];
          }
        }
      }
    }
  });
}

// Packs the row-major rows x cols matrix m (with transpose: its transpose,
// cols x rows) into panels of `width` columns, zero past the last: panel p
// holds every row's `width` columns in turn — a register tile's operand.
void pack_panels(const float* m, int64_t rows, int64_t cols, bool transpose, int64_t width,
                 float* out) {
  const int64_t r_n = transpose ? cols : rows, c_n = transpose ? rows : cols;
  for (int64_t p = 0; p * width < c_n; ++p) {
    for (int64_t i = 0; i < r_n; ++i) {
      for (int64_t q = 0; q < width; ++q) {
        const int64_t j = p * width + q;
        out[(p * r_n + i) * width + q] = j >= c_n    ? 0.f
                                         : transpose ? m[j * cols + i]
                                                     : m[i * cols + j];
      }
    }
  }
}

// One channel, fast mode: dx for dy by the register tile, taps as its rows
// (w packed once) and tile.nr positions of a line as its columns (dy's
// block transposed), summed over dy's channels; each block's tap-by-
// position terms are folded back at once.
void conv_input_grad_one_channel(const Grid& g, const Tables& tb, const float* w, const float* dy,
                                 float* dx) {
  const FixedOrderTile tile = fixed_order_tile(16);
  const int64_t mr = tile.mr, nr = tile.nr, kc = g.taps(), yc = g.yc;
  const int64_t kblocks = (kc + mr - 1) / mr;
  float* pa = scratch(kblocks * yc * mr + yc * nr + kblocks * mr * nr);
  float* pb = pa + kblocks * yc * mr;
  float* vals = pb + yc * nr;
  pack_panels(w, kc, yc, true, mr, pa);
  const TapSpans spans(g);
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    const auto [lo, hi] = inside_part(g, line, first, last);
    for (int64_t o2 = lo; o2 < hi; o2 += nr) {
      const int64_t np = std::min(nr, hi - o2);
      const float* d = dy + (r - first + o2) * yc;
      transpose_to_panel16(d, yc, np, yc, pb);
      for (int64_t kb = 0; kb < kblocks; ++kb)
        tile.fn(yc, pa + kb * yc * mr, pb, vals + kb * mr * nr);
      fold_one_channel(g, tb, spans, line, o2, o2 + np, vals, nr, dx);
    }
  });
}

// Convolutions with at most this many im2col columns (taps × input
// channels) skip the im2col matrix: a GEMM with so short a sum spends more
// time reading and packing it than multiplying.
constexpr int64_t kDirectMaxColumns = 64;

// y = conv(x, w) by the fixed-order GEMM's register tile, fed straight from
// x: each block of tile.mr consecutive output positions of a line is packed
// as the tile's A operand ([column][row], the im2col columns in order), w as
// its B panels once. Every y element is the tile's fma chain over the
// columns in order from +0, so the bits equal im2col + sgemm_fixed_order.
template <int64_t mr>
void conv_forward_direct(const Grid& g, const Tables& tb, const FixedOrderTile& tile,
                         const float* x, const float* w, float* y) {
  MTF_CHECK(tile.mr == mr);
  const int64_t nr = tile.nr, c = g.xc, yc = g.yc, kc = g.taps() * c;
  const int64_t k1 = g.ax[1].kernel, k2 = g.ax[2].kernel;
  const int64_t panels = (yc + nr - 1) / nr;
  float* pb = scratch(panels * nr * kc + mr * kc + mr * nr);
  float* pa = pb + panels * nr * kc;
  float* out = pa + mr * kc;
  pack_panels(w, kc, yc, false, nr, pb);
  const int64_t* t2 = tb.t[2].data();
  const ConvAxis& ax2 = g.ax[2];
  PaddedLines padded;
  for_each_line(g, 0, g.y_rows(), [&](int64_t r, const Row& line, int64_t first, int64_t last) {
    if (c == 1) padded.fill(g, tb, x, line, first, last, mr);
    for (int64_t o2 = first; o2 < last; o2 += mr) {
      const int64_t np = std::min(mr, last - o2);
      for_each_tap_row(g, tb, line, g.xl, [&](int64_t j0, int64_t j1, int64_t row) {
        float* col = pa + (j0 * k1 + j1) * k2 * c * mr;
        if (c == 1) {
          const float* pl = padded.of(j0, j1) + (o2 - first) * ax2.stride;
          for (int64_t j2 = 0; j2 < k2; ++j2) {
            const float* from = pl + j2 * ax2.dilation;
            if (ax2.stride == 1) {
              std::memcpy(col + j2 * mr, from, mr * sizeof(float));
            } else {
              for (int64_t p = 0; p < mr; ++p) col[j2 * mr + p] = from[p * ax2.stride];
            }
          }
          return;
        }
        if (row < 0) {
          std::fill(col, col + k2 * c * mr, 0.f);
          return;
        }
        const float* src = x + row * c;
        for (int64_t j2 = 0; j2 < k2; ++j2) {
          for (int64_t p = 0; p < mr; ++p) {
            const int64_t at = p < np ? t2[(o2 + p) * k2 + j2] : kPad;
            for (int64_t ci = 0; ci < c; ++ci)
              col[(j2 * c + ci) * mr + p] = at < 0 ? 0.f : src[at * c + ci];
          }
        }
      });
      float* dst = y + (r - first + o2) * yc;
      if (yc == nr && np == mr) {  // the tile's rows are y's: no copy
        tile.fn(kc, pa, pb, dst);
        continue;
      }
      for (int64_t jp = 0; jp < panels; ++jp) {
        tile.fn(kc, pa, pb + jp * kc * nr, out);
        const int64_t cols = std::min(nr, yc - jp * nr);
        for (int64_t p = 0; p < np; ++p)
          std::memcpy(dst + p * yc + jp * nr, out + p * nr, cols * sizeof(float));
      }
    }
  });
}

// dw = xᵀ-patches · dy for few columns (taps × channels <= the register
// tile's width): per chunk of kFixedChunkRows rows the im2col rows, laid
// out at the tile's width, are its B operand as they stand, and dy's
// channels (tile.mr at a time) its A; the chunks' sums add up in order. Each
// dw element is thus the chunked fma chain of the fixed-order path.
void conv_filter_grad_direct(const Grid& g, const Tables& tb, const std::vector<char>& run,
                             const FixedOrderTile& tile, const float* x, const float* dy,
                             float* dw) {
  const int64_t mr = tile.mr, nr = tile.nr, kc = g.taps() * g.xc, yc = g.yc, rows = g.y_rows();
  const int64_t chunk = std::min(kFixedChunkRows, rows);
  float* cols = scratch(chunk * nr + chunk * mr + mr * nr);
  float* pa = cols + chunk * nr;
  float* part = pa + chunk * mr;
  for (int64_t p = 0; p < chunk; ++p) std::fill(cols + p * nr + kc, cols + (p + 1) * nr, 0.f);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    im2col(g, tb, run, x, r0, n, cols, nr);
    for (int64_t c0 = 0; c0 < yc; c0 += mr) {
      const int64_t m = std::min(mr, yc - c0);
      for (int64_t p = 0; p < n; ++p) {
        const float* d = dy + (r0 + p) * yc + c0;
        for (int64_t r = 0; r < mr; ++r) pa[p * mr + r] = r < m ? d[r] : 0.f;
      }
      tile.fn(n, pa, cols, part);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t k = 0; k < kc; ++k) {
          float& o = dw[k * yc + c0 + r];
          o = r0 ? o + part[r * nr + k] : part[r * nr + k];
        }
      }
    }
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

// The convolutions' products are many small ones (a chunk of rows at a
// time), which OpenBLAS's threads slow down: on a 2-CPU VM a CNN step's
// convolutions took 1.6 to 4x as long on two BLAS threads as on one,
// varying from launch to launch. They run on one (OpenBLAS splits no sum
// over k, so the bits are those of any thread count).
struct OneBlasThread {
  BlasThreadsShare share{openblas_get_num_threads()};
};

}  // namespace

int64_t conv_chunk_rows(int64_t kc, int64_t rows) {
  return std::max<int64_t>(1, std::min(rows, kChunkFloats / std::max<int64_t>(1, kc)));
}

void conv_forward(const std::vector<ConvAxis>& axes, const HostTensor& x, const SpatialBegin& x_at,
                  const HostTensor& w, HostTensor& y, const SpatialBegin& y_at, bool fixed_order) {
  const OneBlasThread one_thread;
  require_float32(x, "conv");
  const Grid g = make_grid(axes, x.shape(), x_at, y.shape(), y_at);
  const Tables tb = tables(g, g.xat, g.xl, true);
  const int64_t kc = g.taps() * g.xc, rows = g.y_rows();
  MTF_CHECK(w.num_elements() == kc * g.yc);
  if (kc <= kDirectMaxColumns) {
    const FixedOrderTile tile = fixed_order_tile(g.yc);
    const float *xp = x.data<float>(), *wp = w.data<float>();
    float* yp = y.data<float>();
    switch (tile.mr) {
      case 16:
        return conv_forward_direct<16>(g, tb, tile, xp, wp, yp);
      case 8:
        return conv_forward_direct<8>(g, tb, tile, xp, wp, yp);
      case 6:
        return conv_forward_direct<6>(g, tb, tile, xp, wp, yp);
    }
    MTF_CHECK(false);
  }
  const std::vector<char> run = contiguous_runs(g, tb);
  const int64_t chunk = conv_chunk_rows(kc, rows);
  float* cols = scratch(chunk * kc);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    im2col(g, tb, run, x.data<float>(), r0, n, cols, kc);
    gemm(fixed_order, false, false, n, g.yc, kc, cols, kc, w.data<float>(), g.yc, 0.f,
         y.data<float>() + r0 * g.yc, g.yc);
  }
}

void conv_input_grad(const std::vector<ConvAxis>& axes, const HostTensor& dy,
                     const SpatialBegin& dy_at, const HostTensor& w, HostTensor& dx,
                     const SpatialBegin& dx_at, bool fixed_order) {
  const OneBlasThread one_thread;
  require_float32(dy, "conv_input_grad");
  const Grid g = make_grid(axes, dx.shape(), dx_at, dy.shape(), dy_at);
  const Tables tb = tables(g, g.xat, g.xl, false);
  const int64_t c = g.xc, kc = g.taps() * c, rows = g.y_rows();
  MTF_CHECK(w.num_elements() == kc * g.yc);
  float* out = dx.data<float>();
  std::fill(out, out + dx.num_elements(), 0.f);
  if (c == 1 && !fixed_order) {
    conv_input_grad_one_channel(g, tb, w.data<float>(), dy.data<float>(), out);
    return;
  }
  const int64_t chunk = conv_chunk_rows(kc, rows);
  float* cols = scratch(chunk * kc);
  const std::vector<char> run = contiguous_runs(g, tb);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    gemm(fixed_order, false, true, n, kc, g.yc, dy.data<float>() + r0 * g.yc, g.yc, w.data<float>(),
         g.yc, 0.f, cols, kc);
    col2im(g, tb, run, cols, r0, n, out);
  }
}

void conv_filter_grad(const std::vector<ConvAxis>& axes, const HostTensor& x,
                      const SpatialBegin& x_at, const HostTensor& dy, const SpatialBegin& dy_at,
                      HostTensor& dw, bool fixed_order) {
  const OneBlasThread one_thread;
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
  if (g.xc == 1 && !fixed_order) {
    // One channel: the transposed im2col matrix costs a copy per line and
    // tap, where its rows would cost one per position and tap row. (In
    // reproducible mode the register tile below is faster than the
    // fixed-order GEMM over these chunks.)
    const int64_t chunk = conv_chunk_rows(kc, rows);
    float* cols_t = scratch(chunk * kc);
    PaddedLines padded;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t n = std::min(chunk, rows - r0);
      im2col_transposed_one_channel(g, tb, x.data<float>(), r0, n, cols_t, padded);
      gemm(false, false, false, kc, g.yc, n, cols_t, n, dy.data<float>() + r0 * g.yc, g.yc,
           r0 ? 1.f : 0.f, out, g.yc);
    }
    return;
  }
  const std::vector<char> run = contiguous_runs(g, tb);
  const FixedOrderTile tile = fixed_order_tile(kc);
  if (kc <= tile.nr) {
    conv_filter_grad_direct(g, tb, run, tile, x.data<float>(), dy.data<float>(), out);
    return;
  }
  const int64_t chunk = fixed_order ? kFixedChunkRows : conv_chunk_rows(kc, rows);
  float* cols = scratch(std::min(chunk, rows) * kc);
  std::vector<float> part(fixed_order ? dw.num_elements() : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    im2col(g, tb, run, x.data<float>(), r0, n, cols, kc);
    const float* d = dy.data<float>() + r0 * g.yc;
    if (!fixed_order) {
      gemm(false, true, false, kc, g.yc, n, cols, kc, d, g.yc, r0 ? 1.f : 0.f, out, g.yc);
      continue;
    }
    float* target = r0 ? part.data() : out;
    gemm(true, true, false, kc, g.yc, n, cols, kc, d, g.yc, 0.f, target, g.yc);
    if (r0) {
      for (size_t i = 0; i < part.size(); ++i) out[i] += part[i];
    }
  }
}

}  // namespace mtf::kernels
