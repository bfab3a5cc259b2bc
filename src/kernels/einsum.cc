// einsum by dimension name, on OpenBLAS.
//
// Two operands at a time: dimensions found in only one operand and not in the
// output are summed first; the rest are classed as batch (both operands and
// output), M (a and output), N (b and output) and K (contracted). When the
// operands and output already lie in [batch, M|N, K]-compatible orders, sgemm
// reads them in place with its transpose flags; otherwise the operand is
// permuted once into a scratch buffer. Batch dimensions loop over sgemm.
// Three or more operands contract left to right, keeping only dimensions a
// later operand or the output still needs.
#include <cblas.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/blas_core.h"
#include "kernels/gemm_fixed_order.h"
#include "kernels/kernels.h"

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
