// einsum by dimension name, on OpenBLAS.
//
// Two operands at a time: dimensions found in only one operand and not in the
// output are summed first; the rest are classed as batch (both operands and
// output), M (a and output), N (b and output) and K (contracted). Operands and
// output are read and written in place whenever, for each of them, its M|N
// dimensions and its K|N dimensions each fold into one strided axis, one of
// the two with unit stride: sgemm then walks them through its transpose flags
// and leading dimensions, and batch dimensions (any strides) loop over
// sgemm — e.g. attention's [batch, length, heads, d_kv] products need no
// transposing copy. Otherwise the operand is permuted once into a scratch
// buffer. Products with neither M nor N (out[batch] = sum_k a*b) run as one
// fused multiply-add pass. Three or more operands contract left to right,
// keeping only dimensions a later operand or the output still needs.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"
#include "kernels/blas_core.h"
#include "kernels/gemm_fixed_order.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"

namespace mtf::kernels {
namespace {

using Names = std::vector<std::string>;

bool has(const Shape& s, const std::string& n) { return s.contains(n); }

int64_t product(const Shape& s, const Names& names) {
  int64_t p = 1;
  for (const auto& n : names) p *= s.get(n).size;
  return p;
}

Names concat_names(const Names& a, const Names& b, const Names& c = {}) {
  Names r = a;
  r.insert(r.end(), b.begin(), b.end());
  r.insert(r.end(), c.begin(), c.end());
  return r;
}

// `t` with its dimensions permuted into `order` (a copy unless already so).
HostTensor arranged(const HostTensor& t, const Names& order) {
  if (t.shape().names() == order) return t;
  std::vector<Dimension> dims;
  for (const auto& n : order) dims.push_back(t.shape().get(n));
  HostTensor r(Shape(dims), t.dtype());
  broadcast_copy(t, r);
  return r;
}

// `t` summed over its dimensions that are not in `keep`.
HostTensor sum_out_unneeded(const HostTensor& t, const Shape& other, const Shape& out,
                            bool fixed_order) {
  std::vector<Dimension> keep;
  for (const auto& d : t.shape())
    if (has(other, d.name) || has(out, d.name)) keep.push_back(d);
  if (static_cast<int>(keep.size()) == t.shape().ndims()) return t;
  HostTensor r(Shape(keep), t.dtype());
  reduce(ReduceFn::kSum, t, r, fixed_order);
  return r;
}

// Row-major strides of s, by dimension name.
int64_t stride_of(const Shape& s, const std::string& name) {
  int64_t st = 1;
  for (int i = s.ndims() - 1; i >= 0; --i) {
    if (s[i].name == name) return st;
    st *= s[i].size;
  }
  MTF_CHECK(false);
  return 0;
}

// A loop plan over the named axes for three operands; an operand lacking an
// axis steps 0 along it. Sizes come from `sized`, which has every axis.
StridedPlan<3> plan3(const Names& axes, const Shape& sized, const Shape& s0, const Shape& s1,
                     const Shape& s2) {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, 3> strides;
  const Shape* shapes[3] = {&s0, &s1, &s2};
  for (const auto& n : axes) {
    sizes.push_back(sized.get(n).size);
    for (int k = 0; k < 3; ++k)
      strides[k].push_back(shapes[k]->contains(n) ? stride_of(*shapes[k], n) : 0);
  }
  return make_plan<3>(sizes, strides);
}

// The stride of `group` folded into one axis of `s`, or -1 when it does not
// fold (its dimensions of size > 1 must lie in `s` in this order, each outer
// one stepping over exactly the inner one). 0 when the group is empty or all
// of size 1 (any stride will do).
int64_t folded_stride(const Shape& s, const Names& group) {
  int64_t inner_stride = 0, inner_size = 0, last_pos = -1;
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    const Dimension& d = s.get(*it);
    if (d.size == 1) continue;
    const int64_t pos = s.index_of(*it), st = stride_of(s, *it);
    if (last_pos >= 0 && (pos >= last_pos || st != inner_stride * inner_size)) return -1;
    if (last_pos < 0) {
      inner_stride = st;
      inner_size = d.size;
    } else {
      inner_size *= d.size;
    }
    last_pos = pos;
  }
  return inner_stride;
}

// A rows x cols matrix inside a tensor: row-major with leading dimension ld
// (trans = false) or column-major (trans = true).
struct MatrixView {
  bool ok = false, trans = false;
  int64_t ld = 0;
};

MatrixView matrix_view(const Shape& s, const Names& rows, const Names& cols, int64_t nrows,
                       int64_t ncols) {
  MatrixView v;
  const int64_t rs = folded_stride(s, rows), cs = folded_stride(s, cols);
  if (rs < 0 || cs < 0) return v;
  if ((cs == 1 || ncols == 1) && (nrows == 1 || rs >= ncols)) {
    v.ok = true;
    v.ld = nrows == 1 ? std::max<int64_t>(ncols, 1) : rs;
  } else if ((rs == 1 || nrows == 1) && (ncols == 1 || cs >= nrows)) {
    v.ok = v.trans = true;
    v.ld = ncols == 1 ? std::max<int64_t>(nrows, 1) : cs;
  }
  return v;
}

// out[batch] = sum over K of a * b, when the product has neither M nor N: one
// pass of fused multiply-adds over [K..., batch...] in row-major order, so each
// output element sums its terms in K's index order (fixed-order mode's rule).
void batched_dot(const HostTensor& a, const HostTensor& b, const Names& k_names, HostTensor& out) {
  if (folded_stride(a.shape(), k_names) == 1 && folded_stride(b.shape(), k_names) == 1) {
    // K contiguous in both: dot products along K, eight outputs at a time so
    // that their independent chains overlap.
    const int64_t k = product(a.shape(), k_names);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    for_each_row<3>(plan3(out.shape().names(), out.shape(), a.shape(), b.shape(), out.shape()),
                    [&](const int64_t* off, int64_t n, const int64_t* st) {
                      constexpr int kLanes = 8;
                      int64_t i = 0;
                      for (; i + kLanes <= n; i += kLanes) {
                        float acc[kLanes] = {};
                        for (int64_t p = 0; p < k; ++p)
                          for (int j = 0; j < kLanes; ++j)
                            acc[j] = std::fma(pa[off[0] + (i + j) * st[0] + p],
                                              pb[off[1] + (i + j) * st[1] + p], acc[j]);
                        for (int j = 0; j < kLanes; ++j) po[off[2] + (i + j) * st[2]] = acc[j];
                      }
                      for (; i < n; ++i) {
                        float acc = 0.f;
                        for (int64_t p = 0; p < k; ++p)
                          acc =
                              std::fma(pa[off[0] + i * st[0] + p], pb[off[1] + i * st[1] + p], acc);
                        po[off[2] + i * st[2]] = acc;
                      }
                    });
    return;
  }
  Names axes = k_names;
  for (const auto& d : out.shape()) axes.push_back(d.name);
  fill(out, 0.f);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  for_each_row<3>(plan3(axes, a.shape(), a.shape(), b.shape(), out.shape()),
                  [&](const int64_t* off, int64_t n, const int64_t* st) {
                    const float* x = pa + off[0];
                    const float* y = pb + off[1];
                    float* o = po + off[2];
                    if (st[2] == 0) {  // a row along K: one output element
                      float acc = *o;
                      for (int64_t i = 0; i < n; ++i)
                        acc = std::fma(x[i * st[0]], y[i * st[1]], acc);
                      *o = acc;
                    } else if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                      for (int64_t i = 0; i < n; ++i) o[i] = std::fma(x[i], y[i], o[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i)
                        o[i * st[2]] = std::fma(x[i * st[0]], y[i * st[1]], o[i * st[2]]);
                    }
                  });
}

// C = A·B for every batch index, reading A, B and writing C in place through
// their views; returns false (doing nothing) when some view does not exist.
bool gemm_in_place(const HostTensor& A, const HostTensor& B, HostTensor& C, const Names& batch,
                   const Names& M, const Names& N, const Names& K, int64_t m, int64_t n, int64_t k,
                   bool fixed_order) {
  const MatrixView va = matrix_view(A.shape(), M, K, m, k);
  const MatrixView vb = matrix_view(B.shape(), K, N, k, n);
  const MatrixView vc = matrix_view(C.shape(), M, N, m, n);
  if (!va.ok || !vb.ok || !vc.ok || vc.trans) return false;
  const float* pa = A.data<float>();
  const float* pb = B.data<float>();
  float* pc = C.data<float>();
  auto one = [&](int64_t oa, int64_t ob, int64_t oc) {
    if (fixed_order) {
      sgemm_fixed_order(va.trans, vb.trans, m, n, k, pa + oa, va.ld, pb + ob, vb.ld, pc + oc,
                        vc.ld);
      return;
    }
    cblas_sgemm(CblasRowMajor, va.trans ? CblasTrans : CblasNoTrans,
                vb.trans ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, pa + oa, static_cast<int>(va.ld), pb + ob,
                static_cast<int>(vb.ld), 0.0f, pc + oc, static_cast<int>(vc.ld));
  };
  for_each_row<3>(plan3(batch, C.shape(), A.shape(), B.shape(), C.shape()),
                  [&](const int64_t* off, int64_t rows, const int64_t* st) {
                    for (int64_t i = 0; i < rows; ++i)
                      one(off[0] + i * st[0], off[1] + i * st[1], off[2] + i * st[2]);
                  });
  return true;
}

void gemm_int(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const int32_t* a, int64_t lda,
              const int32_t* b, int64_t ldb, int32_t* c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int32_t av = ta ? a[p * lda + i] : a[i * lda + p];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += av * (tb ? b[j * ldb + p] : b[p * ldb + j]);
    }
  }
}

void einsum2(const HostTensor& a_in, const HostTensor& b_in, HostTensor& out, bool fixed_order) {
  const Shape& os = out.shape();
  HostTensor a = sum_out_unneeded(a_in, b_in.shape(), os, fixed_order);
  HostTensor b = sum_out_unneeded(b_in, a.shape(), os, fixed_order);
  if (out.num_elements() == 0) return;

  Names batch, m_names, n_names, k_names;
  for (const auto& d : os) {
    bool in_a = has(a.shape(), d.name), in_b = has(b.shape(), d.name);
    if (in_a && in_b)
      batch.push_back(d.name);
    else if (in_a)
      m_names.push_back(d.name);
    else
      n_names.push_back(d.name);
  }
  const Names out_names = os.names();
  bool swap = false;
  bool out_direct = out_names == concat_names(batch, m_names, n_names);
  if (!out_direct && out_names == concat_names(batch, n_names, m_names)) {
    swap = true;
    out_direct = true;
  }
  const HostTensor& A0 = swap ? b : a;
  const HostTensor& B0 = swap ? a : b;
  const Names& M = swap ? n_names : m_names;
  const Names& N = swap ? m_names : n_names;
  for (const auto& d : A0.shape())
    if (has(B0.shape(), d.name) && !has(os, d.name)) k_names.push_back(d.name);

  if (k_names.empty()) {
    // Nothing is contracted: an elementwise product broadcast into out.
    binary(BinaryFn::kMul, a, b, out);
    return;
  }
  const int64_t nb = product(os, batch), m = product(os, M), n = product(os, N);
  const int64_t k = product(A0.shape(), k_names);
  if (out.dtype() == float32 && k > 0) {
    if (M.empty() && N.empty()) {
      batched_dot(a, b, k_names, out);
      return;
    }
    if (gemm_in_place(A0, B0, out, batch, M, N, k_names, m, n, k, fixed_order) ||
        gemm_in_place(B0, A0, out, batch, N, M, k_names, n, m, k, fixed_order))
      return;
  }
  HostTensor c = out_direct ? out
                            : HostTensor(Shape([&] {
                                           std::vector<Dimension> d;
                                           for (const auto& nm : concat_names(batch, M, N))
                                             d.push_back(os.get(nm));
                                           return d;
                                         }()),
                                         out.dtype());
  if (k == 0) {
    fill(c, 0.f);
  } else {
    // A as [batch, M, K] (or [batch, K, M] read transposed), B as [batch, K, N]
    // (or [batch, N, K]); anything else is permuted once.
    bool ta = false, tb = false;
    HostTensor A = A0, B = B0;
    const Names an = A0.shape().names(), bn = B0.shape().names();
    if (an == concat_names(batch, M, k_names)) {
    } else if (an == concat_names(batch, k_names, M)) {
      ta = true;
    } else {
      A = arranged(A0, concat_names(batch, M, k_names));
    }
    if (bn == concat_names(batch, k_names, N)) {
    } else if (bn == concat_names(batch, N, k_names)) {
      tb = true;
    } else {
      B = arranged(B0, concat_names(batch, k_names, N));
    }
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    if (c.dtype() == float32) {
      const float* pa = A.data<float>();
      const float* pb = B.data<float>();
      float* pc = c.data<float>();
      for (int64_t i = 0; i < nb; ++i) {
        if (fixed_order) {
          sgemm_fixed_order(ta, tb, m, n, k, pa + i * m * k, lda, pb + i * k * n, ldb,
                            pc + i * m * n, n);
          continue;
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f,
                    pa + i * m * k, static_cast<int>(lda), pb + i * k * n, static_cast<int>(ldb),
                    0.0f, pc + i * m * n, static_cast<int>(n));
      }
    } else {
      const int32_t* pa = A.data<int32_t>();
      const int32_t* pb = B.data<int32_t>();
      int32_t* pc = c.data<int32_t>();
      for (int64_t i = 0; i < nb; ++i)
        gemm_int(ta, tb, m, n, k, pa + i * m * k, lda, pb + i * k * n, ldb, pc + i * m * n);
    }
  }
  if (!out_direct) broadcast_copy(c, out);
}

}  // namespace

void einsum(const std::vector<const HostTensor*>& inputs, HostTensor& out, bool fixed_order) {
  MTF_CHECK(!inputs.empty());
  check_blas_core();
  for (const HostTensor* t : inputs) require_supported(*t, true, "einsum");
  if (inputs.size() == 1) {
    reduce(ReduceFn::kSum, *inputs[0], out, fixed_order);
    return;
  }
  HostTensor acc = *inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (i + 1 == inputs.size()) {
      einsum2(acc, *inputs[i], out, fixed_order);
      return;
    }
    // Keep the dimensions that the output or a later operand still needs.
    std::vector<Dimension> keep;
    auto needed = [&](const std::string& name) {
      if (out.shape().contains(name)) return true;
      for (size_t j = i + 1; j < inputs.size(); ++j)
        if (inputs[j]->shape().contains(name)) return true;
      return false;
    };
    for (const auto& d : acc.shape().union_with(inputs[i]->shape()))
      if (needed(d.name)) keep.push_back(d);
    HostTensor next(Shape(keep), out.dtype());
    einsum2(acc, *inputs[i], next, fixed_order);
    acc = next;
  }
}

}  // namespace mtf::kernels
