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

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/blas_core.h"
#include "kernels/blas_threads.h"
#include "kernels/dot_products.h"
#include "kernels/einsum_shapes.h"
#include "kernels/fused_elementwise.h"
#include "kernels/gemm_bfloat16.h"
#include "kernels/gemm_fixed_order.h"
#include "kernels/kernels.h"
#include "kernels/strided_loop.h"

namespace mtf::kernels {
namespace {

bool has(const Shape& s, const std::string& n) { return s.contains(n); }

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

// Everything einsum2 decides from shapes alone, so that a program decides it
// once per step instead of once per run.
struct Plan2 {
  enum class Path { kNothing, kProduct, kDot, kInPlace, kArranged };
  Path path = Path::kNothing;
  Shape a_kept, b_kept;  // the operands after summing out what nobody needs
  bool sum_a = false, sum_b = false;
  bool swap = false;  // A is b (the output is [batch, N, M] of the names)
  Names k_names;      // kDot
  // kInPlace: A·B -> C through views (A is b when in_place_swapped).
  bool in_place_swapped = false;
  MatrixView va, vb, vc;
  StridedPlan<3> batch_plan;
  int64_t m = 0, n = 0, k = 0, nb = 0;
  // kArranged: operands read as [batch, M, K] / [batch, K, N] (ta / tb: the
  // other order), permuted first where `arrange_*` is non-empty; the result
  // goes to `c_shape` and is copied into out unless out_direct.
  bool ta = false, tb = false, out_direct = false;
  Names arrange_a, arrange_b;
  Shape c_shape;
};

Shape kept_shape(const Shape& t, const Shape& other, const Shape& out) {
  std::vector<Dimension> keep;
  for (const auto& d : t)
    if (has(other, d.name) || has(out, d.name)) keep.push_back(d);
  return Shape(keep);
}

Plan2 plan2(const Shape& a_in, const Shape& b_in, const Shape& os, DType dtype) {
  Plan2 p;
  p.a_kept = kept_shape(a_in, b_in, os);
  p.sum_a = p.a_kept.ndims() != a_in.ndims();
  p.b_kept = kept_shape(b_in, p.a_kept, os);
  p.sum_b = p.b_kept.ndims() != b_in.ndims();
  if (os.num_elements() == 0) return p;
  const Shape& a = p.a_kept;
  const Shape& b = p.b_kept;

  Names batch, m_names, n_names, k_names;
  for (const auto& d : os) {
    bool in_a = has(a, d.name), in_b = has(b, d.name);
    if (in_a && in_b)
      batch.push_back(d.name);
    else if (in_a)
      m_names.push_back(d.name);
    else
      n_names.push_back(d.name);
  }
  const Names out_names = os.names();
  bool out_direct = out_names == concat_names(batch, m_names, n_names);
  if (!out_direct && out_names == concat_names(batch, n_names, m_names)) {
    p.swap = true;
    out_direct = true;
  }
  const Shape& A0 = p.swap ? b : a;
  const Shape& B0 = p.swap ? a : b;
  const Names& M = p.swap ? n_names : m_names;
  const Names& N = p.swap ? m_names : n_names;
  for (const auto& d : A0)
    if (has(B0, d.name) && !has(os, d.name)) k_names.push_back(d.name);

  if (k_names.empty()) {
    p.path = Plan2::Path::kProduct;  // an elementwise product broadcast into out
    return p;
  }
  p.nb = product(os, batch);
  p.m = product(os, M);
  p.n = product(os, N);
  p.k = product(A0, k_names);
  if ((dtype == float32 || dtype == bfloat16) && p.k > 0) {
    if (M.empty() && N.empty()) {
      p.path = Plan2::Path::kDot;
      p.k_names = k_names;
      return p;
    }
    // C = A·B read and written in place, in either orientation.
    for (bool swapped : {false, true}) {
      const Shape& A = swapped ? B0 : A0;
      const Shape& B = swapped ? A0 : B0;
      const Names& Mx = swapped ? N : M;
      const Names& Nx = swapped ? M : N;
      const int64_t m = swapped ? p.n : p.m, n = swapped ? p.m : p.n;
      const MatrixView va = matrix_view(A, Mx, k_names, m, p.k);
      const MatrixView vb = matrix_view(B, k_names, Nx, p.k, n);
      const MatrixView vc = matrix_view(os, Mx, Nx, m, n);
      if (!va.ok || !vb.ok || !vc.ok || vc.trans) continue;
      p.path = Plan2::Path::kInPlace;
      p.in_place_swapped = swapped;
      p.va = va;
      p.vb = vb;
      p.vc = vc;
      if (swapped) std::swap(p.m, p.n);
      p.batch_plan = plan3(batch, os, A, B, os);
      return p;
    }
  }
  p.path = Plan2::Path::kArranged;
  p.out_direct = out_direct;
  std::vector<Dimension> cd;
  for (const auto& nm : concat_names(batch, M, N)) cd.push_back(os.get(nm));
  p.c_shape = Shape(cd);
  const Names an = A0.names(), bn = B0.names();
  if (an == concat_names(batch, M, k_names)) {
  } else if (an == concat_names(batch, k_names, M)) {
    p.ta = true;
  } else {
    p.arrange_a = concat_names(batch, M, k_names);
  }
  if (bn == concat_names(batch, k_names, N)) {
  } else if (bn == concat_names(batch, N, k_names)) {
    p.tb = true;
  } else {
    p.arrange_b = concat_names(batch, k_names, N);
  }
  return p;
}

// gemm_bfloat16 on bfloat16 A and B from element offsets a_at, b_at into C
// (float32 or bfloat16) from c_at; g.c_bfloat16 follows c's dtype.
void run_bfloat16_gemm(Bfloat16Gemm g, const HostTensor& a, int64_t a_at, const HostTensor& b,
                       int64_t b_at, HostTensor& c, int64_t c_at) {
  g.c_bfloat16 = c.dtype() == bfloat16;
  void* pc = g.c_bfloat16 ? static_cast<void*>(c.data<BFloat16>() + c_at)
                          : static_cast<void*>(c.data<float>() + c_at);
  gemm_bfloat16(g, a.data<BFloat16>() + a_at, b.data<BFloat16>() + b_at, pc);
}

// out = alpha * A·B + beta * out for every batch index, operands read and
// written in place through the plan's views (Path::kInPlace).
void gemm_through_views(const Plan2& p, const HostTensor& a, const HostTensor& b, float alpha,
                        float beta, HostTensor& out, bool fixed_order) {
  const HostTensor& A0 = p.swap ? b : a;
  const HostTensor& B0 = p.swap ? a : b;
  const HostTensor& A = p.in_place_swapped ? B0 : A0;
  const HostTensor& B = p.in_place_swapped ? A0 : B0;
  if (A.dtype() == bfloat16) {
    MTF_CHECK(alpha == 1.0f && beta == 0.0f);
    // The innermost batch axis in each call, and the next one out as the
    // call's outer axis (oneDNN keeps its fast kernels on both at once).
    const StridedPlan<3>& bp = p.batch_plan;
    Bfloat16Gemm g{p.va.trans, p.vb.trans, p.m, p.n, p.k, p.va.ld, p.vb.ld,
                   p.vc.ld,    1,          0,   0,   0,   false,   fixed_order};
    if (bp.empty) return;
    if (bp.sizes.empty()) return run_bfloat16_gemm(g, A, 0, B, 0, out, 0);
    g.batch = bp.sizes.back();
    g.stride_a = bp.strides.back()[0];
    g.stride_b = bp.strides.back()[1];
    g.stride_c = bp.strides.back()[2];
    StridedPlan<3> outer = bp;
    outer.sizes.pop_back();
    outer.strides.pop_back();
    for_each_row<3>(outer, [&](const int64_t* off, int64_t rows, const int64_t* st) {
      Bfloat16Gemm call = g;
      if (!outer.sizes.empty()) {
        call.outer = rows;
        call.outer_a = st[0];
        call.outer_b = st[1];
        call.outer_c = st[2];
      }
      run_bfloat16_gemm(call, A, off[0], B, off[1], out, off[2]);
    });
    return;
  }
  const float* pa = A.data<float>();
  const float* pb = B.data<float>();
  float* pc = out.data<float>();
  auto one = [&](int64_t oa, int64_t ob, int64_t oc) {
    if (fixed_order) {
      MTF_CHECK(alpha == 1.0f && beta == 0.0f);
      sgemm_fixed_order(p.va.trans, p.vb.trans, p.m, p.n, p.k, pa + oa, p.va.ld, pb + ob, p.vb.ld,
                        pc + oc, p.vc.ld);
      return;
    }
    cblas_sgemm(CblasRowMajor, p.va.trans ? CblasTrans : CblasNoTrans,
                p.vb.trans ? CblasTrans : CblasNoTrans, static_cast<int>(p.m),
                static_cast<int>(p.n), static_cast<int>(p.k), alpha, pa + oa,
                static_cast<int>(p.va.ld), pb + ob, static_cast<int>(p.vb.ld), beta, pc + oc,
                static_cast<int>(p.vc.ld));
  };
  for_each_row<3>(p.batch_plan, [&](const int64_t* off, int64_t rows, const int64_t* st) {
    for (int64_t i = 0; i < rows; ++i)
      one(off[0] + i * st[0], off[1] + i * st[1], off[2] + i * st[2]);
  });
}

// Runs a plan made for exactly these shapes.
void run2(const Plan2& p, const HostTensor& a_in, const HostTensor& b_in, HostTensor& out,
          bool fixed_order) {
  HostTensor a = a_in, b = b_in;
  if (p.sum_a) {
    a = HostTensor(p.a_kept, a_in.dtype());
    reduce(ReduceFn::kSum, a_in, a, fixed_order);
  }
  if (p.sum_b) {
    b = HostTensor(p.b_kept, b_in.dtype());
    reduce(ReduceFn::kSum, b_in, b, fixed_order);
  }
  switch (p.path) {
    case Plan2::Path::kNothing:
      return;
    case Plan2::Path::kProduct:
      return binary(BinaryFn::kMul, a, b, out);
    case Plan2::Path::kDot:
      return batched_dot(a, b, p.k_names, out, fixed_order);
    case Plan2::Path::kInPlace:
      return gemm_through_views(p, a, b, 1.0f, 0.0f, out, fixed_order);
    case Plan2::Path::kArranged:
      break;
  }
  const HostTensor& A0 = p.swap ? b : a;
  const HostTensor& B0 = p.swap ? a : b;
  HostTensor c = p.out_direct ? out : HostTensor(p.c_shape, out.dtype());
  const int64_t m = p.m, n = p.n, k = p.k, nb = p.nb;
  if (k == 0) {
    fill(c, 0.f);
  } else {
    const HostTensor A = p.arrange_a.empty() ? A0 : arranged(A0, p.arrange_a);
    const HostTensor B = p.arrange_b.empty() ? B0 : arranged(B0, p.arrange_b);
    const bool ta = p.ta, tb = p.tb;
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    if (A.dtype() == bfloat16) {
      const Bfloat16Gemm g{ta, tb, m,     n,     k,     lda,   ldb,
                           n,  nb, m * k, k * n, m * n, false, fixed_order};
      run_bfloat16_gemm(g, A, 0, B, 0, c, 0);
    } else if (c.dtype() == float32) {
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
  if (!p.out_direct) broadcast_copy(c, out);
}

}  // namespace

// The contraction chain: operand i (from 1) contracts into the running
// result, whose shape keeps what the output or a later operand needs.
struct EinsumPlan : KernelPlan {
  std::vector<Shape> inputs;
  Shape out;
  bool fixed_order = false;
  std::vector<Shape> partials;  // shape after contracting operand i (last: out)
  std::vector<Plan2> steps;
};

std::vector<GemmCall> einsum_gemm_calls(const KernelPlan& plan) {
  std::vector<GemmCall> calls;
  const auto* p = dynamic_cast<const EinsumPlan*>(&plan);
  if (!p || p->fixed_order) return calls;
  for (const Plan2& s : p->steps) {
    switch (s.path) {
      case Plan2::Path::kInPlace:
      case Plan2::Path::kArranged:
        calls.push_back({std::max<int64_t>(1, s.nb), s.m, s.n, s.k});
        break;
      default:  // products broadcast elementwise, dot products: no BLAS
        break;
    }
  }
  return calls;
}

bool einsum_without_gemm(const KernelPlan& plan) {
  const auto* p = dynamic_cast<const EinsumPlan*>(&plan);
  return p && !p->fixed_order && einsum_gemm_calls(plan).empty();
}

std::shared_ptr<const KernelPlan> plan_einsum(const std::vector<Shape>& inputs, const Shape& out,
                                              DType dtype, bool fixed_order) {
  MTF_CHECK(!inputs.empty());
  auto p = std::make_shared<EinsumPlan>();
  p->inputs = inputs;
  p->out = out;
  p->fixed_order = fixed_order;
  Shape acc = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    Shape next = out;
    if (i + 1 < inputs.size()) {
      // Keep the dimensions that the output or a later operand still needs.
      std::vector<Dimension> keep;
      auto needed = [&](const std::string& name) {
        if (out.contains(name)) return true;
        for (size_t j = i + 1; j < inputs.size(); ++j)
          if (inputs[j].contains(name)) return true;
        return false;
      };
      for (const auto& d : acc.union_with(inputs[i]))
        if (needed(d.name)) keep.push_back(d);
      next = Shape(keep);
    }
    p->steps.push_back(plan2(acc, inputs[i], next, dtype));
    p->partials.push_back(next);
    acc = next;
  }
  return p;
}

namespace {

bool any_bfloat16(const std::vector<const HostTensor*>& inputs, const HostTensor& out) {
  if (out.dtype() == bfloat16) return true;
  for (const HostTensor* t : inputs)
    if (t->dtype() == bfloat16) return true;
  return false;
}

// True when the plan is one product of two bfloat16 operands over K alone
// (batched_dot reads them as they are).
bool runs_on_bfloat16_dot(const EinsumPlan& p, const std::vector<const HostTensor*>& inputs) {
  if (inputs.size() != 2 || inputs[0]->dtype() != bfloat16 || inputs[1]->dtype() != bfloat16)
    return false;
  const Plan2& s = p.steps[0];
  return s.path == Plan2::Path::kDot && !s.sum_a && !s.sum_b;
}

// True when the plan is one GEMM of two bfloat16 operands (gemm_bfloat16.h
// reads them as they are, on oneDNN or the fixed-order kernel).
bool runs_on_bfloat16_gemm(const EinsumPlan& p, const std::vector<const HostTensor*>& inputs) {
  if (inputs.size() != 2) return false;
  for (const HostTensor* t : inputs)
    if (t->dtype() != bfloat16) return false;
  const Plan2& s = p.steps[0];
  const bool gemm = s.path == Plan2::Path::kInPlace || s.path == Plan2::Path::kArranged;
  return gemm && !s.sum_a && !s.sum_b && s.k > 0;
}

// True when the plan is one elementwise product of two operands (every
// dimension of each is in the output).
bool runs_as_product(const EinsumPlan& p) {
  if (p.inputs.size() != 2) return false;
  const Plan2& s = p.steps[0];
  return s.path == Plan2::Path::kProduct && !s.sum_a && !s.sum_b;
}

// out = a * b as a fused kernel's program (rounded where out is bfloat16).
FusedExpr product_expr(bool round_bfloat16) {
  FusedExpr e;
  e.num_inputs = 2;
  e.instrs.resize(3);
  e.instrs[0].input = 0;
  e.instrs[1].input = 1;
  FusedInstr& mul = e.instrs[2];
  mul.kind = FusedInstr::Kind::kBinary;
  mul.binary = BinaryFn::kMul;
  mul.a = 0;
  mul.b = 1;
  mul.round_bfloat16 = round_bfloat16;
  e.outputs = {2};
  return e;
}

}  // namespace

void einsum(const KernelPlan& plan, const std::vector<const HostTensor*>& inputs, HostTensor& out) {
  const auto& p = dynamic_cast<const EinsumPlan&>(plan);
  MTF_CHECK(inputs.size() == p.inputs.size() && out.shape() == p.out);
  check_blas_core();
  if (any_bfloat16(inputs, out)) {
    if (runs_on_bfloat16_gemm(p, inputs)) {
      for (size_t i = 0; i < inputs.size(); ++i) MTF_CHECK(inputs[i]->shape() == p.inputs[i]);
      run2(p.steps[0], *inputs[0], *inputs[1], out, p.fixed_order);
      return;
    }
    if (runs_on_bfloat16_dot(p, inputs)) {
      for (size_t i = 0; i < inputs.size(); ++i) MTF_CHECK(inputs[i]->shape() == p.inputs[i]);
      const Names& k_names = p.steps[0].k_names;
      if (out.dtype() == float32)
        return batched_dot(*inputs[0], *inputs[1], k_names, out, p.fixed_order);
      HostTensor sums(out.shape(), float32);
      batched_dot(*inputs[0], *inputs[1], k_names, sums, p.fixed_order);
      floats_to_bfloat16(sums.data<float>(), reinterpret_cast<uint16_t*>(out.data<BFloat16>()),
                         out.num_elements());
      return;
    }
    if (runs_as_product(p) && inputs[0]->dtype() != int32 && inputs[1]->dtype() != int32) {
      // An elementwise product (broadcast by name): the fused kernel widens
      // a block at a time and rounds once, the bits of the copies' product.
      for (size_t i = 0; i < inputs.size(); ++i) MTF_CHECK(inputs[i]->shape() == p.inputs[i]);
      return fused_elementwise(product_expr(out.dtype() == bfloat16), {inputs[0], inputs[1]},
                               {&out}, false, kernel_threads());
    }
    // On float32 copies (products of bfloat16 values are exact in float32),
    // the result rounded once: the bits of the float32 kernels.
    std::vector<HostTensor> wide;
    wide.reserve(inputs.size());
    std::vector<const HostTensor*> wide_inputs;
    for (const HostTensor* t : inputs) {
      if (t->dtype() == bfloat16) {
        wide.push_back(t->as_dtype(float32));
        wide_inputs.push_back(&wide.back());
      } else {
        wide_inputs.push_back(t);
      }
    }
    if (out.dtype() != bfloat16) return einsum(plan, wide_inputs, out);
    HostTensor wide_out(out.shape(), float32);
    einsum(plan, wide_inputs, wide_out);
    floats_to_bfloat16(wide_out.data<float>(), reinterpret_cast<uint16_t*>(out.data<BFloat16>()),
                       out.num_elements());
    return;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_supported(*inputs[i], true, "einsum");
    MTF_CHECK(inputs[i]->shape() == p.inputs[i]);
  }
  if (inputs.size() == 1) {
    reduce(ReduceFn::kSum, *inputs[0], out, p.fixed_order);
    return;
  }
  HostTensor acc = *inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (i + 1 == inputs.size()) {
      run2(p.steps[i - 1], acc, *inputs[i], out, p.fixed_order);
      return;
    }
    HostTensor next(p.partials[i - 1], out.dtype());
    run2(p.steps[i - 1], acc, *inputs[i], next, p.fixed_order);
    acc = next;
  }
}

void einsum_accumulate(const KernelPlan& plan, const std::vector<const HostTensor*>& inputs,
                       float alpha, HostTensor& acc) {
  const auto& p = dynamic_cast<const EinsumPlan&>(plan);
  MTF_CHECK(acc.shape() == p.out && acc.dtype() == float32 && !p.fixed_order);
  if (inputs.size() == 2 && p.steps[0].path == Plan2::Path::kInPlace && !p.steps[0].sum_a &&
      !p.steps[0].sum_b) {
    check_blas_core();
    for (size_t i = 0; i < inputs.size(); ++i) MTF_CHECK(inputs[i]->shape() == p.inputs[i]);
    gemm_through_views(p.steps[0], *inputs[0], *inputs[1], alpha, 1.0f, acc, false);
    return;
  }
  HostTensor t(p.out, float32);
  einsum(plan, inputs, t);
  scaled_add(acc, alpha, t, acc);
}

void einsum(const std::vector<const HostTensor*>& inputs, HostTensor& out, bool fixed_order) {
  MTF_CHECK(!inputs.empty());
  std::vector<Shape> shapes;
  for (const HostTensor* t : inputs) shapes.push_back(t->shape());
  einsum(*plan_einsum(shapes, out.shape(), out.dtype(), fixed_order), inputs, out);
}

}  // namespace mtf::kernels
