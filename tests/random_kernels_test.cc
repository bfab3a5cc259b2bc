// random_uniform's kernel gives, element by element, the number its
// definition names (kernels.h): fma(uint_to_unit(w0), hi - lo, lo) of
// philox4x32's first word for counter (logical index, run) and key seed —
// whatever the row lengths, the slice's offset within the full tensor, and
// where the low 32 bits of the index wrap (the 16-lane path hands those
// blocks to the one-at-a-time loop).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/philox.h"

namespace mtf::kernels {
namespace {

float defined_uniform(uint64_t seed, uint64_t run, uint64_t logical, float lo, float hi) {
  const auto w = philox4x32({static_cast<uint32_t>(logical), static_cast<uint32_t>(logical >> 32),
                             static_cast<uint32_t>(run), static_cast<uint32_t>(run >> 32)},
                            {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return std::fma(uint_to_unit(w[0]), hi - lo, lo);
}

struct Case {
  const char* full;
  const char* slice;
  std::vector<int64_t> offset;
};

TEST(RandomKernels, UniformGivesItsDefinitionsBits) {
  const std::vector<Case> cases = {
      {"a:8;b:100", "a:8;b:100", {0, 0}},                // rows of 100: blocks and a tail
      {"a:8;b:100", "a:3;b:37", {4, 50}},                // a slice: rows start mid-way
      {"a:2;b:3;c:16", "a:2;b:3;c:16", {0, 0, 0}},       // rows of exactly one block
      {"x:5", "x:5", {0}},                               // shorter than a block
      {"s:1", "s:1", {0}},                               // one value
      {"a:3;b:2147483648", "a:1;b:64", {1, 2147483608}}  // indices cross 2^32
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.full) + " / " + c.slice);
    const Shape full(c.full), slice(c.slice);
    for (uint64_t seed : {uint64_t{42}, uint64_t{0x123456789abcdefULL}}) {
      const uint64_t run = 0x500000007ULL;
      HostTensor out(slice, float32);
      random_uniform(seed, run, full, c.offset, -0.5f, 3.0f, out);
      const auto fs = full.strides();
      const auto ss = slice.strides();
      int mismatches = 0;
      for (int64_t i = 0; i < slice.num_elements(); ++i) {
        uint64_t logical = 0;
        for (int d = 0; d < slice.ndims(); ++d)
          logical += (c.offset[d] + (i / ss[d]) % slice[d].size) * fs[d];
        const float want = defined_uniform(seed, run, logical, -0.5f, 3.0f);
        const float got = out.data<float>()[i];
        mismatches += std::memcmp(&want, &got, sizeof want) != 0;
        ASSERT_GE(got, -0.5f);
        ASSERT_LT(got, 3.0f);
      }
      EXPECT_EQ(mismatches, 0);
    }
  }
}

}  // namespace
}  // namespace mtf::kernels
