// Running sums and products along one axis, and the product's gradient.
// Each output element combines its inputs one at a time in index order
// (reverse: from the end), so a run's bits depend only on the scanned
// dimension: the lowering keeps that dimension whole, and every layout of the
// other dimensions gives the same result.
#include "core/check.h"
#include "kernels/axis_view.h"
#include "kernels/kernels.h"

namespace mtf::kernels {
namespace {

template <typename T, typename Op>
void scan_typed(const T* x, T* out, const AxisView& v, bool exclusive, bool reverse, T identity,
                Op op) {
  for (int64_t o = 0; o < v.outer; ++o) {
    const T* xo = x + o * v.len * v.inner;
    T* yo = out + o * v.len * v.inner;
    for (int64_t step = 0; step < v.len; ++step) {
      const int64_t i = reverse ? v.len - 1 - step : step;
      const int64_t prev = reverse ? i + 1 : i - 1;  // the element combined before i
      T* y = yo + i * v.inner;
      const T* xi = xo + i * v.inner;
      if (step == 0) {
        for (int64_t k = 0; k < v.inner; ++k) y[k] = exclusive ? identity : xi[k];
        continue;
      }
      const T* yp = yo + prev * v.inner;
      const T* xp = xo + prev * v.inner;
      if (exclusive) {
        for (int64_t k = 0; k < v.inner; ++k) y[k] = op(yp[k], xp[k]);
      } else {
        for (int64_t k = 0; k < v.inner; ++k) y[k] = op(yp[k], xi[k]);
      }
    }
  }
}

}  // namespace

void scan(ScanFn fn, const HostTensor& x, int axis, bool exclusive, bool reverse, HostTensor& out) {
  require_supported(x, true, fn == ScanFn::kSum ? "cumsum" : "cumprod");
  MTF_CHECK(x.shape() == out.shape() && x.dtype() == out.dtype());
  const AxisView v = view_around(x.shape(), axis);
  if (x.dtype() == float32) {
    if (fn == ScanFn::kSum) {
      scan_typed<float>(x.data<float>(), out.data<float>(), v, exclusive, reverse, 0.f,
                        [](float a, float b) { return a + b; });
    } else {
      scan_typed<float>(x.data<float>(), out.data<float>(), v, exclusive, reverse, 1.f,
                        [](float a, float b) { return a * b; });
    }
  } else {
    if (fn == ScanFn::kSum) {
      scan_typed<int32_t>(x.data<int32_t>(), out.data<int32_t>(), v, exclusive, reverse, 0,
                          [](int32_t a, int32_t b) { return a + b; });
    } else {
      scan_typed<int32_t>(x.data<int32_t>(), out.data<int32_t>(), v, exclusive, reverse, 1,
                          [](int32_t a, int32_t b) { return a * b; });
    }
  }
}

// For y = cumprod(x) (inclusive, forward): dL/dx_i = E_i * S_i, where
// E_i = x_0 ... x_{i-1} (the exclusive product) and S_i = sum over j >= i of
// g_j * x_{i+1} ... x_j, built backwards as S_i = g_i + x_{i+1} * S_{i+1}.
// Exclusive: S_i = sum over j > i of g_j * x_{i+1} ... x_{j-1}, i.e.
// S_i = g_{i+1} + x_{i+1} * S_{i+1}. Reverse runs the same with indices
// mirrored. No division, so zeros in x are fine.
void cumprod_grad(const HostTensor& x, const HostTensor& g, int axis, bool exclusive, bool reverse,
                  HostTensor& out) {
  require_supported(x, false, "cumprod gradient");
  MTF_CHECK(x.shape() == g.shape() && x.shape() == out.shape());
  const AxisView v = view_around(x.shape(), axis);
  HostTensor e(x.shape(), float32);
  scan(ScanFn::kProd, x, axis, /*exclusive=*/true, reverse, e);
  std::vector<float> s(static_cast<size_t>(v.inner));
  const float* px = x.data<float>();
  const float* pg = g.data<float>();
  const float* pe = e.data<float>();
  float* po = out.data<float>();
  for (int64_t o = 0; o < v.outer; ++o) {
    const int64_t base = o * v.len * v.inner;
    // Walk against the scan's direction: t = position in scan order.
    for (int64_t t = v.len - 1; t >= 0; --t) {
      const int64_t i = reverse ? v.len - 1 - t : t;
      const int64_t next = reverse ? i - 1 : i + 1;  // the element after i in scan order
      const float* gi = pg + base + i * v.inner;
      for (int64_t k = 0; k < v.inner; ++k) {
        float si;
        if (t == v.len - 1) {
          si = exclusive ? 0.f : gi[k];
        } else {
          const float xn = px[base + next * v.inner + k];
          const float gn = pg[base + next * v.inner + k];
          si = (exclusive ? gn : gi[k]) + xn * s[k];
        }
        s[k] = si;
        po[base + i * v.inner + k] = pe[base + i * v.inner + k] * si;
      }
    }
  }
}

}  // namespace mtf::kernels
