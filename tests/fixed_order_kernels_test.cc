// The fixed-order kernels behind reproducible mode. GEMM: every element is
// the FMA chain over k in index order, so it must equal a scalar std::fma loop
// bit for bit, for any shape and transposition, and give the same bits for a
// row or column computed as part of a larger or a smaller matrix (what slicing
// by a layout does). Sums: each element adds its inputs in order, whatever
// the sizes of the dimensions that are kept.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/gemm_fixed_order.h"
#include "kernels/kernels.h"

namespace mtf::kernels {
namespace {

struct Operands {
  int64_t m, n, k;
  bool ta, tb;
  std::vector<float> a, b;
  int64_t lda() const { return ta ? m : k; }
  int64_t ldb() const { return tb ? k : n; }
  float A(int64_t i, int64_t p) const { return ta ? a[p * m + i] : a[i * k + p]; }
  float B(int64_t p, int64_t j) const { return tb ? b[j * k + p] : b[p * n + j]; }
};

Operands make(int64_t m, int64_t n, int64_t k, bool ta, bool tb, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Operands o{m, n, k, ta, tb, std::vector<float>(m * k), std::vector<float>(k * n)};
  for (float& x : o.a) x = u(rng);
  for (float& x : o.b) x = u(rng);
  return o;
}

// The definition: c = fma(a[i][p], b[p][j], c) for p = 0..k-1, from +0.
float chain(const Operands& o, int64_t i, int64_t j) {
  float c = 0.f;
  for (int64_t p = 0; p < o.k; ++p) c = std::fma(o.A(i, p), o.B(p, j), c);
  return c;
}

std::vector<float> run(const Operands& o, bool scalar) {
  std::vector<float> c(o.m * o.n, -7.f);
  (scalar ? sgemm_fixed_order_scalar : sgemm_fixed_order)(
      o.ta, o.tb, o.m, o.n, o.k, o.a.data(), o.lda(), o.b.data(), o.ldb(), c.data(), o.n);
  return c;
}

std::vector<float> run_on(FixedOrderIsa isa, const Operands& o) {
  std::vector<float> c(o.m * o.n, -7.f);
  sgemm_fixed_order_on(isa, o.ta, o.tb, o.m, o.n, o.k, o.a.data(), o.lda(), o.b.data(), o.ldb(),
                       c.data(), o.n);
  return c;
}

// Every instruction set this CPU has (the best one is what runs).
std::vector<FixedOrderIsa> isas_here() {
  std::vector<FixedOrderIsa> r{FixedOrderIsa::kScalar};
  if (best_fixed_order_isa() != FixedOrderIsa::kScalar) r.push_back(FixedOrderIsa::kAvx2);
  if (best_fixed_order_isa() == FixedOrderIsa::kAvx512) r.push_back(FixedOrderIsa::kAvx512);
  return r;
}

TEST(GemmFixedOrder, EveryElementIsTheFmaChainInIndexOrder) {
  uint32_t seed = 1;
  for (int64_t m : {1, 5, 6, 7, 8, 9, 13, 100})
    for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 40})
      for (int64_t k : {1, 3, 64, 257})
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            const Operands o = make(m, n, k, ta, tb, seed++);
            for (FixedOrderIsa isa : isas_here()) {
              const std::vector<float> got = run_on(isa, o);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  ASSERT_EQ(got[i * n + j], chain(o, i, j))
                      << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb << " at " << i
                      << "," << j << " isa " << static_cast<int>(isa);
                }
            }
          }
}

// The register tiles the direct convolution packs for itself: the same
// chains, narrow (n <= 16) and wide.
TEST(GemmFixedOrder, RegisterTilesAreTheFmaChainInIndexOrder) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (FixedOrderIsa isa : isas_here()) {
    for (int64_t n : {1, 16, 17, 40}) {
      const FixedOrderTile tile = fixed_order_tile(n, isa);
      for (int64_t k : {1, 25, 144}) {
        std::vector<float> pa(k * tile.mr), pb(k * tile.nr), out(tile.mr * tile.nr, -7.f);
        for (float& x : pa) x = u(rng);
        for (float& x : pb) x = u(rng);
        tile.fn(k, pa.data(), pb.data(), out.data());
        for (int r = 0; r < tile.mr; ++r) {
          for (int c = 0; c < tile.nr; ++c) {
            float want = 0.f;
            for (int64_t p = 0; p < k; ++p)
              want = std::fma(pa[p * tile.mr + r], pb[p * tile.nr + c], want);
            ASSERT_EQ(out[r * tile.nr + c], want)
                << "isa " << static_cast<int>(isa) << " n " << n << " k " << k;
          }
        }
      }
    }
  }
}

TEST(GemmFixedOrder, SlicesGiveTheSameBitsAsTheWhole) {
  const int64_t m = 100, n = 1024, k = 784;
  const Operands whole = make(m, n, k, false, false, 99);
  const std::vector<float> c = run(whole, false);
  // Rows 50..99 alone (a data-parallel slice) and columns 256..511 alone (a
  // model-parallel slice), as separate, smaller products.
  std::vector<float> rows(50 * n), cols(m * 256);
  sgemm_fixed_order(false, false, 50, n, k, whole.a.data() + 50 * k, k, whole.b.data(), n,
                    rows.data(), n);
  sgemm_fixed_order(false, false, m, 256, k, whole.a.data(), k, whole.b.data() + 256, n,
                    cols.data(), 256);
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(rows[i * n + j], c[(50 + i) * n + j]);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < 256; ++j) ASSERT_EQ(cols[i * 256 + j], c[i * n + 256 + j]);
}

TEST(GemmFixedOrder, CloseToTheExactProductAndEmptyKIsZero) {
  const Operands o = make(37, 29, 500, true, false, 5);
  const std::vector<float> c = run(o, false);
  for (int64_t i = 0; i < o.m; ++i)
    for (int64_t j = 0; j < o.n; ++j) {
      double exact = 0, scale = 0;
      for (int64_t p = 0; p < o.k; ++p) {
        exact += static_cast<double>(o.A(i, p)) * o.B(p, j);
        scale += std::abs(static_cast<double>(o.A(i, p)) * o.B(p, j));
      }
      EXPECT_NEAR(c[i * o.n + j], exact, 1e-6 * scale + 1e-30);
    }
  std::vector<float> z(6, 5.f);
  sgemm_fixed_order(false, false, 2, 3, 0, nullptr, 0, nullptr, 3, z.data(), 3);
  for (float v : z) EXPECT_EQ(v, 0.f);
  sgemm_fixed_order(false, false, 0, 3, 4, nullptr, 4, nullptr, 3, nullptr, 3);  // no rows: no-op
}

// Summing over batch: column j of x[batch, hidden] gives the same bits whether
// hidden has 64 columns or the slice keeps one (then the batch is the
// contiguous row the kernel would otherwise sum in eight partial sums).
TEST(FixedOrderSum, ASliceSumsEachElementAsTheWholeDoes) {
  const Dimension batch{"batch", 1000}, hidden{"hidden", 64}, one{"hidden", 1};
  HostTensor x(Shape({batch, hidden}), float32);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = u(rng);
  HostTensor whole(Shape({hidden}), float32);
  reduce(ReduceFn::kSum, x, whole, /*fixed_order=*/true);
  bool fast_differs = false;
  for (int64_t j = 0; j < hidden.size; ++j) {
    HostTensor col(Shape({batch, one}), float32), s(Shape({one}), float32),
        fast(Shape({one}), float32);
    float sequential = 0.f;
    for (int64_t i = 0; i < batch.size; ++i) {
      col.data<float>()[i] = x.data<float>()[i * hidden.size + j];
      sequential += col.data<float>()[i];
    }
    reduce(ReduceFn::kSum, col, s, true);
    ASSERT_EQ(s.data<float>()[0], whole.data<float>()[j]) << "column " << j;
    ASSERT_EQ(s.data<float>()[0], sequential) << "column " << j;
    reduce(ReduceFn::kSum, col, fast, false);
    fast_differs = fast_differs || fast.data<float>()[0] != sequential;
  }
  // Without fixed order some column differs: the test can tell.
  EXPECT_TRUE(fast_differs);
}

}  // namespace
}  // namespace mtf::kernels
