#include "session/slice_assembly.h"

#include <cstring>

#include "collectives/tags.h"
#include "kernels/kernels.h"
#include "mtf/collectives.h"

namespace mtf::detail {

void SliceAssembler::gather_slices(std::vector<HostTensor>& slices, const std::string& what) {
  Transport& t = *transport_;
  const int me = t.rank();
  const HostTensor& mine = slices[me];
  const int64_t n = static_cast<int64_t>(slices.size());
  HostTensor all(Shape({{"__ranks__", n * mine.num_elements()}}), mine.dtype());
  t.begin_collective({0, "gather", what, static_cast<int64_t>(mine.num_bytes())});
  allgather(t, Group::all(static_cast<int>(n), me), mine.raw_data(), all.raw_data(),
            mine.num_elements(), mine.dtype(),
            collectives::tag_in(collectives::TagSpace::kSessionGather, gathers_++));
  const HostTensor own = mine;
  for (int64_t p = 0; p < n; ++p) {
    HostTensor s(own.shape(), own.dtype());
    std::memcpy(s.raw_data(), static_cast<const char*>(all.raw_data()) + p * own.num_bytes(),
                own.num_bytes());
    slices[p] = s;
  }
}

HostTensor SliceAssembler::assemble(const TensorLayout& layout, std::vector<HostTensor> slices,
                                    const std::string& what) {
  if (transport_) {
    if (slices.size() == 1 || layout.is_fully_replicated()) return slices[transport_->rank()];
    gather_slices(slices, what);
  }
  if (slices.size() == 1 || layout.is_fully_replicated()) return slices[0];
  HostTensor full(layout.shape(), slices[0].dtype());
  const std::vector<int> m2t = layout.mesh_to_tensor();
  for (size_t p = 0; p < slices.size(); ++p) {
    const std::vector<int64_t> c = mesh_.coordinates(static_cast<int64_t>(p));
    bool first_copy = true;
    for (size_t a = 0; a < c.size(); ++a) first_copy = first_copy && (m2t[a] >= 0 || c[a] == 0);
    if (first_copy) kernels::insert_block(full, layout.slice_begin(p), slices[p]);
  }
  return full;
}

}  // namespace mtf::detail
