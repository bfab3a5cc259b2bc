// Fuzzes the mesh shape, layout rule and tensor shape parsers: input lines
// 1-3 are a mesh shape, layout rules and a tensor shape, as the flags and
// Python take them. Whatever parses must print back to text that parses to
// the same value, and a tensor's layout on the mesh either is computed or is
// a LayoutError.
#include <algorithm>
#include <cstdlib>

#include "fuzz_input.h"
#include "mtf/layout.h"
#include "mtf/shape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtf;
  std::vector<std::string> f = fuzz::fields(fuzz::text(data, size), '\n');
  f.resize(3);
  fuzz::expect_only_mtf_errors([&] {
    const MeshShape mesh(f[0]);
    if (MeshShape(mesh.to_string()) != mesh) std::abort();
    const LayoutRules rules(f[1]);
    if (!(LayoutRules(rules.to_string()) == rules)) std::abort();
    rules.validate(mesh);
    const Shape shape(f[2]);
    if (Shape(shape.to_string()) != shape) std::abort();
    const TensorLayout layout = TensorLayout::make(shape, rules, mesh);
    // Every processor's slice lies inside the tensor.
    const Shape slice = layout.slice_shape();
    for (int64_t p = 0; p < std::min<int64_t>(mesh.size(), 64); ++p) {
      const std::vector<int64_t> begin = layout.slice_begin(p);
      for (int i = 0; i < shape.ndims(); ++i)
        if (begin[i] < 0 || begin[i] + slice[i].size > shape[i].size) std::abort();
    }
    sharding_picture(layout);
  });
  return 0;
}
