// strided_loop.h — the one loop nest behind broadcast, transpose, binary
// elementwise ops and reductions.
//
// A plan iterates a row-major index space (`sizes`) and, for each operand,
// advances an offset by that operand's stride per axis (0 = broadcast or
// reduced axis). Axes of size 1 are dropped and adjacent axes that every
// operand walks contiguously are merged, so a same-shape op becomes one flat
// loop. for_each_row calls `row(offsets, n, inner_strides)` once per innermost
// row, where the caller's tight loop can be vectorized.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mtf::kernels {

template <int kOperands>
struct StridedPlan {
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, kOperands>> strides;  // per axis
  bool empty = false;                                   // some axis has size 0
};

template <int kOperands>
StridedPlan<kOperands> make_plan(const std::vector<int64_t>& sizes,
                                 const std::array<std::vector<int64_t>, kOperands>& strides) {
  StridedPlan<kOperands> p;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) p.empty = true;
    if (sizes[i] == 1) continue;
    std::array<int64_t, kOperands> s;
    for (int k = 0; k < kOperands; ++k) s[k] = strides[k][i];
    if (!p.sizes.empty()) {
      bool mergeable = true;
      for (int k = 0; k < kOperands; ++k)
        if (p.strides.back()[k] != s[k] * sizes[i]) mergeable = false;
      if (mergeable) {
        p.sizes.back() *= sizes[i];
        p.strides.back() = s;
        continue;
      }
    }
    p.sizes.push_back(sizes[i]);
    p.strides.push_back(s);
  }
  return p;
}

// Calls row(const int64_t* offsets, int64_t n, const int64_t* inner_strides).
template <int kOperands, typename Row>
void for_each_row(const StridedPlan<kOperands>& p, Row&& row) {
  if (p.empty) return;
  std::array<int64_t, kOperands> off{};
  const int nd = static_cast<int>(p.sizes.size());
  if (nd == 0) {
    std::array<int64_t, kOperands> zero{};
    row(off.data(), int64_t{1}, zero.data());
    return;
  }
  const int outer = nd - 1;
  std::vector<int64_t> idx(outer, 0);
  const int64_t n = p.sizes[outer];
  const int64_t* inner = p.strides[outer].data();
  while (true) {
    row(off.data(), n, inner);
    int d = outer - 1;
    for (; d >= 0; --d) {
      for (int k = 0; k < kOperands; ++k) off[k] += p.strides[d][k];
      if (++idx[d] < p.sizes[d]) break;
      for (int k = 0; k < kOperands; ++k) off[k] -= p.strides[d][k] * p.sizes[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Strides of `operand_names` (with row-major `operand_strides`) seen along the
// axes `axes`: the operand's stride for an axis it has, 0 for one it lacks.
std::vector<int64_t> strides_along(const std::vector<std::string>& axes,
                                   const std::vector<std::string>& operand_names,
                                   const std::vector<int64_t>& operand_strides);

}  // namespace mtf::kernels
