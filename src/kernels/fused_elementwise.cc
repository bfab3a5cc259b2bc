#include "kernels/fused_elementwise.h"

#include <algorithm>
#include <array>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/fused_rows.h"
#include "kernels/strided_loop.h"
#include "kernels/thread_split.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {

std::string FusedExpr::describe() const {
  std::string s;
  for (const FusedInstr& in : instrs) {
    if (in.kind == FusedInstr::Kind::kInput) continue;
    s += s.empty() ? "" : ", ";
    s += in.kind == FusedInstr::Kind::kUnary ? unary_name(in.unary) : binary_name(in.binary);
  }
  if (reduce_of >= 0) s += std::string(s.empty() ? "" : ", ") + reduce_name(reduce_fn);
  return s;
}

namespace {

// Elements of a row evaluated at once: every instruction's block of values
// stays in L1 (16 instructions x 1 KiB).
constexpr int64_t kBlock = 512;
// Distance between two instructions' blocks in the scratch: one cache line
// more than a block, so that blocks are never a multiple of 4 KiB apart (a
// load from one block and a store to another would then falsely wait on each
// other: "4K aliasing").
constexpr int64_t kBlockPitch = kBlock + 16;

// A value of one instruction over a block: element i at p[i * stride], with
// stride 0 (one value for the whole block) or 1; or, for a bfloat16 input
// the one-pass rows read in place, at h[i * stride].
struct Value {
  const float* p = nullptr;
  int64_t stride = 0;
  const uint16_t* h = nullptr;
  RowOperand operand() const {
    return h ? RowOperand{h, stride, true} : RowOperand{p, stride, false};
  }
};

// An operand's elements: float32 or bfloat16.
struct Data {
  void* p = nullptr;
  bool bf16 = false;
  float* f() const { return static_cast<float*>(p); }
  uint16_t* h() const { return static_cast<uint16_t*>(p); }
  Data at(int64_t elements) const {
    return {bf16 ? static_cast<void*>(h() + elements) : static_cast<void*>(f() + elements), bf16};
  }
};

// Reads input block p[i * stride] (stride 0: one value) into `own` as float32.
Value load(const Data& p, int64_t stride, int64_t m, float* own) {
  if (!p.bf16) {
    if (stride == 0 || stride == 1) return {p.f(), stride};
    for (int64_t i = 0; i < m; ++i) own[i] = p.f()[i * stride];
    return {own, 1};
  }
  if (stride == 0 || stride == 1) {
    bfloat16_to_floats(p.h(), own, stride ? m : 1);
    return {own, stride};
  }
  for (int64_t i = 0; i < m; ++i) own[i] = bfloat16_bits_to_float(p.h()[i * stride]);
  return {own, 1};
}

// Reads positions [b0, b0 + m) of a merged row (see merge_short_rows) of an
// input that holds one value per original row of `row_len` elements, rows
// `row_stride` apart, into `own`.
Value load_expanded(const Data& p, int64_t row_stride, int64_t row_len, int64_t b0, int64_t m,
                    float* own) {
  for (int64_t i = 0; i < m;) {
    const int64_t r = (b0 + i) / row_len;
    const int64_t end = std::min(m, (r + 1) * row_len - b0);
    const Data at = p.at(r * row_stride);
    std::fill(own + i, own + end, at.bf16 ? bfloat16_bits_to_float(*at.h()) : *at.f());
    i = end;
  }
  return {own, 1};
}

// Rows shorter than a block (softmax's 128 positions of attention memory, a
// convolution's 16 channels) cost the kernel's per-row work for little
// data. When every operand walks the innermost axis contiguously, following
// on from the previous row; or holds one value per row; or holds the same
// row for every row (a bias over the innermost axis), the two innermost axes
// become one row: the one-value operands are then read through
// load_expanded (their `expand` entry is the stride between their values),
// the repeated rows through a Tiled copy (`tiled` true). Returns the
// original row length, or 0 when the plan stays as it was.
template <int kOps>
int64_t merge_short_rows(StridedPlan<kOps>& p, std::array<int64_t, kOps>& expand,
                         std::array<bool, kOps>& tiled) {
  expand.fill(0);
  tiled.fill(false);
  const size_t nd = p.sizes.size();
  if (p.empty || nd < 2 || p.sizes[nd - 1] >= kBlock) return 0;
  const int64_t n = p.sizes[nd - 1];
  const std::array<int64_t, kOps> inner = p.strides[nd - 1], outer = p.strides[nd - 2];
  for (int k = 0; k < kOps; ++k)
    if (!(inner[k] == 1 && (outer[k] == n || outer[k] == 0)) && inner[k] != 0) return 0;
  for (int k = 0; k < kOps; ++k) {
    expand[k] = inner[k] == 0 ? outer[k] : 0;
    tiled[k] = inner[k] == 1 && outer[k] == 0;
    p.strides[nd - 2][k] = inner[k];
  }
  p.sizes[nd - 2] *= n;
  p.sizes.pop_back();
  p.strides.pop_back();
  return n;
}

// A row of `row_len` values repeated as float32, long enough that positions
// [b0, b0 + m) of a merged row read it contiguously from b0 % row_len.
// Rebuilt when the row it repeats moves (an outer axis of the plan).
struct Tiled {
  std::vector<float> values;
  const void* of = nullptr;
  Value block(const Data& p, int64_t row_len, int64_t b0) {
    if (p.p != of) {
      // Rebuilt once per row of the outer axes (softmax's bias changes with
      // every query position): the row is read once, then copied.
      const size_t n = static_cast<size_t>(row_len);
      values.resize(static_cast<size_t>(kBlock) + n);
      if (p.bf16) {
        bfloat16_to_floats(p.h(), values.data(), row_len);
      } else {
        std::copy(p.f(), p.f() + row_len, values.data());
      }
      for (size_t i = n; i < values.size(); i += n)
        std::copy(values.data(), values.data() + std::min(n, values.size() - i), values.data() + i);
      of = p.p;
    }
    return {values.data() + b0 % row_len, 1};
  }
};

// Writes a block of values to o[i * stride].
void store(const Value& v, int64_t m, const Data& o, int64_t stride) {
  if (o.bf16) {
    if (stride == 1 && v.stride == 1) return floats_to_bfloat16(v.p, o.h(), m);
    for (int64_t i = 0; i < m; ++i) o.h()[i * stride] = float_to_bfloat16_bits(v.p[i * v.stride]);
    return;
  }
  if (stride == 1 && v.stride == 1) {
    std::copy(v.p, v.p + m, o.f());
  } else {
    for (int64_t i = 0; i < m; ++i) o.f()[i * stride] = v.p[i * v.stride];
  }
}

// For each instruction: true when its op stores bfloat16 but nothing reads
// its values except stores into bfloat16 outputs, whose conversion rounds
// them the same way — rounding them first would be a second pass for
// nothing.
std::vector<bool> rounded_by_its_store(const FusedExpr& e, const std::vector<Data>& out_data) {
  const size_t n = e.instrs.size();
  std::vector<bool> r(n);
  for (size_t j = 0; j < n; ++j) r[j] = e.instrs[j].round_bfloat16;
  for (const FusedInstr& in : e.instrs) {
    if (in.kind == FusedInstr::Kind::kInput) continue;
    if (in.a >= 0) r[in.a] = false;
    if (in.kind == FusedInstr::Kind::kBinary && in.b >= 0) r[in.b] = false;
  }
  for (size_t k = 0; k < out_data.size(); ++k)
    if (!out_data[k].bf16) r[e.outputs[k]] = false;
  return r;
}

// Which instructions run as one-pass rows (fused_rows.h); which bfloat16
// inputs they read in place (every reader is a row op and the input is no
// output); and the bfloat16 output each row op writes itself (-1: none; not
// one that shares its buffer with an input, which must wait for the block's
// last read).
struct RowPlan {
  std::vector<char> row_op, in_place;
  std::vector<int> out16_of;
};

RowPlan plan_rows(const FusedExpr& e, const std::vector<Data>& in_data,
                  const std::vector<Data>& out_data, const std::vector<bool>& aliased) {
  const size_t n = e.instrs.size();
  RowPlan r{std::vector<char>(n, 0), std::vector<char>(n, 0), std::vector<int>(n, -1)};
  std::vector<char> read_by_others(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const FusedInstr& in = e.instrs[j];
    if (in.kind == FusedInstr::Kind::kInput) continue;
    r.row_op[j] = in.kind == FusedInstr::Kind::kUnary ? row_unary_supported(in.unary)
                                                      : row_binary_supported(in.binary);
    if (!r.row_op[j]) {
      read_by_others[in.a] = 1;
      if (in.kind == FusedInstr::Kind::kBinary) read_by_others[in.b] = 1;
    }
  }
  for (int j : e.outputs) read_by_others[j] = 1;
  for (size_t j = 0; j < n; ++j) {
    const FusedInstr& in = e.instrs[j];
    r.in_place[j] =
        in.kind == FusedInstr::Kind::kInput && in_data[in.input].bf16 && !read_by_others[j];
  }
  for (size_t k = 0; k < e.outputs.size() && k < out_data.size(); ++k) {
    const int j = e.outputs[k];
    if (out_data[k].bf16 && !aliased[k] && r.row_op[j] && e.instrs[j].round_bfloat16 &&
        r.out16_of[j] < 0)
      r.out16_of[j] = static_cast<int>(k);
  }
  return r;
}

// A row op (fused_rows.h) over a block of m values into `own` (an output
// row when to_output), and into o16 (a bfloat16 output row) when given: one
// pass that reads, applies, rounds and writes.
Value run_row_op(const FusedInstr& in, const std::vector<Value>& values, float* own, bool to_output,
                 int64_t m, uint16_t* o16) {
  const Value& x = values[in.a];
  const bool unary = in.kind == FusedInstr::Kind::kUnary;
  if (unary && in.unary == UnaryFn::kIdentity && !in.round_bfloat16 && !x.h && !to_output)
    return x;  // a float32 cast or identity kept in scratch: the same values
  const int64_t stride = (x.stride || (!unary && values[in.b].stride) || to_output || o16) ? 1 : 0;
  if (unary) {
    row_unary(in.unary, x.operand(), stride ? m : 1, own, in.round_bfloat16, o16);
  } else {
    row_binary(in.binary, x.operand(), values[in.b].operand(), stride ? m : 1, own,
               in.round_bfloat16, o16);
  }
  return {own, stride};
}

// Any other op over a block: the unfused kernels' loops on float32 values,
// then rounded where the op stores bfloat16 (unless only a bfloat16 store
// reads the values, which rounds them the same way).
Value run_block_op(const FusedInstr& in, const std::vector<Value>& values, float* own,
                   bool to_output, int64_t m, bool rounded_by_store) {
  Value v;
  bool rounded = false;  // the instruction rounded its values itself
  const Value& x = values[in.a];
  if (in.kind == FusedInstr::Kind::kUnary) {
    const bool identity = in.unary == UnaryFn::kIdentity;
    if (identity && (!in.round_bfloat16 || rounded_by_store) && !to_output) {
      return x;  // a float32 cast or identity kept in scratch: the same values
    } else if (identity && in.round_bfloat16 && x.stride == 1) {
      round_floats_to_bfloat16(x.p, own, m);  // a cast to bfloat16, in one pass
      v = {own, 1};
      rounded = true;
    } else if (x.stride == 0 && to_output) {
      // One value for the block, written across an output row.
      unary_float(in.unary, x.p, own, 1);
      std::fill(own + 1, own + m, own[0]);
      v = {own, 1};
    } else {
      unary_float(in.unary, x.p, own, x.stride ? m : 1);
      v = {own, x.stride};
    }
  } else {
    const Value& y = values[in.b];
    const int64_t stride = (x.stride || y.stride || to_output) ? 1 : 0;
    binary_float_row(in.binary, own, x.p, stride ? x.stride : 0, y.p, stride ? y.stride : 0,
                     stride ? m : 1);
    v = {own, stride};
  }
  if (in.round_bfloat16 && !rounded && !rounded_by_store)
    round_floats_to_bfloat16(own, v.stride ? m : 1);
  return v;
}

// Evaluates `e` over a plan of kOps operands (outputs first, then inputs,
// then unused padding). float32 outputs that share no buffer with an input
// are written by their instruction directly; the others after the whole
// block. bfloat16 inputs are widened a block at a time, and an instruction
// whose op stores bfloat16 rounds its values as that op does.
template <int kOps>
void run_fused(const FusedExpr& e, const std::array<std::vector<int64_t>, kMaxFusedOperands>& st,
               const std::vector<int64_t>& sizes, const std::vector<Data>& in_data,
               const std::vector<Data>& out_data, const std::vector<bool>& aliased) {
  std::array<std::vector<int64_t>, kOps> strides;
  for (int k = 0; k < kOps; ++k) strides[k] = st[k];
  auto plan = make_plan<kOps>(sizes, strides);
  std::array<int64_t, kOps> expand;
  std::array<bool, kOps> tiled;
  const int64_t row_len = merge_short_rows<kOps>(plan, expand, tiled);
  std::array<Tiled, kOps> tiles;
  const int n_out = static_cast<int>(out_data.size());
  const size_t n_instr = e.instrs.size();
  // Which output (if any) each instruction writes directly.
  std::vector<int> direct(n_instr, -1);
  for (int k = 0; k < n_out; ++k)
    if (!aliased[k] && !out_data[k].bf16) direct[e.outputs[k]] = k;
  const std::vector<bool> rounded_by_store = rounded_by_its_store(e, out_data);
  const RowPlan rows = plan_rows(e, in_data, out_data, aliased);
  std::vector<char> written16(n_out);
  // One block of scratch per instruction (an input uses its block only when
  // it is read with a stride other than 0 or 1).
  thread_local std::vector<float> scratch_buffer;
  scratch_buffer.resize(n_instr * kBlockPitch);
  float* const scratch = scratch_buffer.data();
  std::vector<Value> values(n_instr);
  for_each_row(plan, [&](const int64_t* off, int64_t n, const int64_t* s) {
    for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
      const int64_t m = std::min(kBlock, n - b0);
      std::fill(written16.begin(), written16.end(), 0);
      for (size_t j = 0; j < n_instr; ++j) {
        const FusedInstr& in = e.instrs[j];
        float* const mine = scratch + j * kBlockPitch;
        float* own = mine;
        if (direct[j] >= 0 && s[direct[j]] == 1)
          own = out_data[direct[j]].f() + off[direct[j]] + b0;
        Value& v = values[j];
        if (in.kind == FusedInstr::Kind::kInput) {
          const int k = n_out + in.input;
          const Data at = in_data[in.input].at(off[k] + b0 * s[k]);
          if (expand[k] != 0) {
            v = load_expanded(in_data[in.input].at(off[k]), expand[k], row_len, b0, m, mine);
          } else if (tiled[k]) {
            v = tiles[k].block(in_data[in.input].at(off[k]), row_len, b0);
          } else if (rows.in_place[j] && (s[k] == 0 || s[k] == 1)) {
            v = {nullptr, s[k], at.h()};
          } else {
            v = load(at, s[k], m, mine);
          }
          continue;
        }
        if (rows.row_op[j]) {
          const int k16 = rows.out16_of[j];
          uint16_t* o16 = k16 >= 0 && s[k16] == 1 ? out_data[k16].h() + off[k16] + b0 : nullptr;
          v = run_row_op(in, values, own, own != mine, m, o16);
          if (o16) written16[k16] = 1;
        } else {
          v = run_block_op(in, values, own, own != mine, m, rounded_by_store[j]);
        }
      }
      // Outputs not written directly (sharing a buffer with an input, or
      // strided): stored after every instruction has read the block.
      for (int k = 0; k < n_out; ++k) {
        const int j = e.outputs[k];
        if ((direct[j] == k && s[k] == 1) || written16[k]) continue;
        store(values[j], m, out_data[k].at(off[k] + b0 * s[k]), s[k]);
      }
    }
  });
}

using OperandStrides = std::array<std::vector<int64_t>, kMaxFusedOperands>;

// Runs `e` over `sizes`; operands as run_fused takes them.
void run_space(const FusedExpr& e, const OperandStrides& strides, const std::vector<int64_t>& sizes,
               const std::vector<Data>& in_data, const std::vector<Data>& out_data,
               const std::vector<bool>& aliased) {
  const size_t ops = out_data.size() + in_data.size();
  if (ops <= 4) return run_fused<4>(e, strides, sizes, in_data, out_data, aliased);
  if (ops <= 8) return run_fused<8>(e, strides, sizes, in_data, out_data, aliased);
  run_fused<kMaxFusedOperands>(e, strides, sizes, in_data, out_data, aliased);
}

// Splits the space into `threads` parts along its outermost axis with at
// least that many positions (a part is a box of the space: the operands'
// strides stay, their starts move) and runs them at once. Elementwise: the
// bits do not depend on the split.
void run_space_on_threads(const FusedExpr& e, const OperandStrides& strides,
                          const std::vector<int64_t>& sizes, const std::vector<Data>& in_data,
                          const std::vector<Data>& out_data, const std::vector<bool>& aliased,
                          int threads) {
  const int axis = split_axis(sizes, threads);
  if (axis < 0) return run_space(e, strides, sizes, in_data, out_data, aliased);
  const int n_out = static_cast<int>(out_data.size());
  run_on_threads(sizes, axis, threads, [&](const std::vector<int64_t>& part, int64_t r0) {
    std::vector<Data> out_at(out_data.size()), in_at(in_data.size());
    for (int k = 0; k < n_out; ++k) out_at[k] = out_data[k].at(r0 * strides[k][axis]);
    for (size_t i = 0; i < in_data.size(); ++i)
      in_at[i] = in_data[i].at(r0 * strides[n_out + i][axis]);
    run_space(e, strides, part, in_at, out_at, aliased);
  });
}

// Floats of the reduced instruction evaluated per piece of a reduction
// epilogue's space (at least one row of its first axis): L2-resident.
constexpr int64_t kPieceFloats = 16384;

}  // namespace

void fused_elementwise(const FusedExpr& e, const std::vector<const HostTensor*>& inputs,
                       const std::vector<HostTensor*>& outputs, bool fixed_order, int max_threads) {
  const bool reduces = e.reduce_of >= 0;
  // The operands of the elementwise part: its outputs, then (for an
  // epilogue) the piece of reduced values, then the inputs.
  const int n_out = static_cast<int>(e.outputs.size()) + (reduces ? 1 : 0);
  const int n_in = static_cast<int>(inputs.size());
  MTF_CHECK(n_in == e.num_inputs && outputs.size() == e.outputs.size() + (reduces ? 1 : 0));
  MTF_CHECK(n_out >= 1 && n_out + n_in <= kMaxFusedOperands);
  const Shape& shape = reduces ? e.reduce_space : outputs[0]->shape();
  const auto names = shape.names();
  OperandStrides strides;
  std::vector<Data> out_data;
  std::vector<Data> in_data;
  std::vector<bool> aliased(n_out, false);
  auto data_of = [](const HostTensor& t) {
    MTF_CHECK(t.dtype() == float32 || t.dtype() == bfloat16);
    return Data{const_cast<void*>(t.raw_data()), t.dtype() == bfloat16};
  };
  for (int k = 0; k < n_out; ++k) {
    const bool piece = reduces && k == n_out - 1;
    MTF_CHECK(piece || outputs[k]->shape() == shape);
    strides[k] = shape.strides();
    out_data.push_back(piece ? Data{} : data_of(*outputs[k]));
  }
  for (int i = 0; i < n_in; ++i) {
    strides[n_out + i] =
        strides_along(names, inputs[i]->shape().names(), inputs[i]->shape().strides());
    in_data.push_back(data_of(*inputs[i]));
    for (int k = 0; k < n_out; ++k) aliased[k] = aliased[k] || in_data.back().p == out_data[k].p;
  }
  for (int k = n_out + n_in; k < kMaxFusedOperands; ++k) strides[k].assign(names.size(), 0);
  const std::vector<int64_t> sizes = shape.sizes();
  const int threads = threads_for(shape.num_elements(), max_threads);
  if (!reduces) return run_space_on_threads(e, strides, sizes, in_data, out_data, aliased, threads);

  // The epilogue: pieces of the space along its first axis, which the
  // reduced output keeps, so each output element sums within one piece in
  // the order reduce() sums the whole (whichever thread takes the piece).
  HostTensor& reduced = *outputs.back();
  MTF_CHECK(reduced.dtype() == float32 && shape.ndims() >= 1 &&
            reduced.shape().index_of(shape[0].name) >= 0);
  const std::vector<int64_t> red_strides =
      strides_along(names, reduced.shape().names(), reduced.shape().strides());
  float* const red = reduced.data<float>();
  std::fill(red, red + reduced.num_elements(), reduce_identity(e.reduce_fn));
  const int64_t rows = sizes[0];
  if (rows == 0 || shape.num_elements() == 0) return;
  const int64_t row = shape.num_elements() / rows;
  const int64_t per_piece = std::max<int64_t>(1, kPieceFloats / row);
  FusedExpr piece = e;
  piece.outputs.push_back(e.reduce_of);
  piece.reduce_of = -1;
  const int64_t pieces = (rows + per_piece - 1) / per_piece;
  auto run_piece = [&](int64_t p) {
    const int64_t r0 = p * per_piece;
    thread_local std::vector<float> piece_buffer;
    piece_buffer.resize(std::min(per_piece, rows) * row);
    std::vector<Data> out_at(out_data.size());
    std::vector<Data> in_at(in_data.size());
    std::vector<int64_t> piece_sizes = sizes;
    piece_sizes[0] = std::min(per_piece, rows - r0);
    for (int k = 0; k < n_out; ++k)
      out_at[k] =
          k == n_out - 1 ? Data{piece_buffer.data(), false} : out_data[k].at(r0 * strides[k][0]);
    for (int i = 0; i < n_in; ++i) in_at[i] = in_data[i].at(r0 * strides[n_out + i][0]);
    run_space(piece, strides, piece_sizes, in_at, out_at, aliased);
    reduce_float_into(e.reduce_fn, piece_sizes, piece_buffer.data(), strides[n_out - 1],
                      red + r0 * red_strides[0], red_strides, fixed_order);
  };
  if (threads <= 1 || pieces < 2) {
    for (int64_t p = 0; p < pieces; ++p) run_piece(p);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t p = 0; p < pieces; ++p) run_piece(p);
}

}  // namespace mtf::kernels
