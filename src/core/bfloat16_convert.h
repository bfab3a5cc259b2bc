// bfloat16_convert.h — float32 <-> bfloat16 over arrays, with the vector
// instructions the CPU has. Internal.
//
// Every path gives the bits of the scalar functions in mtf/bfloat16.h
// (round to nearest even, NaN kept and quieted, no flush to zero), so a
// result does not depend on the machine. Paths: portable C++; AVX-512F
// integer rounding (a few instructions per 16 values); and on CPUs with
// AVX512-BF16, its VCVTNEPS2BF16, which treats subnormal inputs as zero:
// those lanes (exponent 0, fraction not 0) take the integer rounding, and the
// path is used only after a self-check on this CPU gives the integer
// path's bits (ties, carries, infinities, NaN payloads, subnormals).
#pragma once

#include <cstdint>

namespace mtf {

enum class Bf16ConvertPath { kPortable, kAvx512, kAvx512Bf16 };

// The path used on this CPU: AVX512-BF16 where it runs and passes the
// self-check, else AVX-512F where it runs, else portable C++ that the
// compiler may vectorize.
Bf16ConvertPath bf16_convert_path();

// out[i] = bfloat16(in[i]) for i < n. `path` forces one (tests; forcing
// a vector path on a CPU without it is the caller's error).
void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n);
void floats_to_bfloat16(const float* in, uint16_t* out, int64_t n, Bf16ConvertPath path);
// x[i] = float(bfloat16(x[i])) for i < n, in place: what storing the value
// as bfloat16 and reading it back gives, in one pass.
void round_floats_to_bfloat16(float* x, int64_t n);
void round_floats_to_bfloat16(float* x, int64_t n, Bf16ConvertPath path);
// y[i] = float(bfloat16(x[i])): the same, from one array into another.
void round_floats_to_bfloat16(const float* x, float* y, int64_t n);
void round_floats_to_bfloat16(const float* x, float* y, int64_t n, Bf16ConvertPath path);
// out[i] = float(in[i]) for i < n.
void bfloat16_to_floats(const uint16_t* in, float* out, int64_t n);
void bfloat16_to_floats(const uint16_t* in, float* out, int64_t n, Bf16ConvertPath path);

}  // namespace mtf
