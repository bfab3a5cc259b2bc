#include "checkpoint/format.h"

#include <algorithm>

#include "mtf/errors.h"

namespace mtf::checkpoint {

std::string dataset_name(const std::string& variable) {
  std::string s = variable;
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

hid_t file_type(DType d) {
  switch (d) {
    case float32:
      return H5T_IEEE_F32LE;
    case int32:
      return H5T_STD_I32LE;
    case bfloat16:
      return H5T_STD_U16LE;
    case bool_:
      return H5T_STD_U8LE;
  }
  return H5T_IEEE_F32LE;
}

hid_t memory_type(DType d) {
  switch (d) {
    case float32:
      return H5T_NATIVE_FLOAT;
    case int32:
      return H5T_NATIVE_INT32;
    case bfloat16:
      return H5T_NATIVE_UINT16;
    case bool_:
      return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_FLOAT;
}

DType parse_dtype(const std::string& s, const std::string& where) {
  DType d;
  if (dtype_from_name(s, &d)) return d;
  throw IoError(where + ": unknown dtype \"" + s + "\"; the file is corrupted or from a newer mtf");
}

Region region(hid_t dataset, const Shape& full, const std::vector<int64_t>& begin,
              const Shape& shape, const std::string& path) {
  Region r;
  r.file_space =
      h5::Handle(h5::check(H5Dget_space(dataset), "reading a dataspace", path), H5Sclose);
  if (full.ndims() == 0) {
    r.mem_space = h5::Handle(H5Screate(H5S_SCALAR), H5Sclose);
    return r;
  }
  std::vector<hsize_t> start(begin.begin(), begin.end()), count;
  for (const Dimension& d : shape) count.push_back(static_cast<hsize_t>(d.size));
  h5::check_status(H5Sselect_hyperslab(r.file_space, H5S_SELECT_SET, start.data(), nullptr,
                                       count.data(), nullptr),
                   "selecting a block", path);
  r.mem_space =
      h5::Handle(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  return r;
}

// The raw-data extents of the named (non-virtual) datasets, for the seal.
std::vector<Extent> data_extents(const std::string& tmp, const std::vector<std::string>& datasets) {
  std::vector<Extent> extents;
  h5::Handle file = h5::open_file(tmp, false);
  for (const std::string& name : datasets) {
    h5::Handle ds(h5::check(H5Dopen2(file, name.c_str(), H5P_DEFAULT),
                            "opening dataset \"" + name + "\"", tmp),
                  H5Dclose);
    const haddr_t offset = H5Dget_offset(ds);
    if (offset != HADDR_UNDEF && H5Dget_storage_size(ds) > 0)
      extents.push_back({offset, H5Dget_storage_size(ds)});
    H5Eclear2(H5E_DEFAULT);
  }
  file.close(tmp);
  return extents;
}

}  // namespace mtf::checkpoint
