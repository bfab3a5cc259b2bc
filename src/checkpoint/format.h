// format.h — what the checkpoint writer and reader share about the file:
// its format name and version, dataset names, HDF5 types, and hyperslab
// regions of a dataset. Format documented in docs/checkpoints.md. Internal.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "mtf/dtype.h"
#include "mtf/shape.h"

namespace mtf::checkpoint {

constexpr const char* kFormat = "mtf-checkpoint";
// Version 1: every tensor in one file. Version 2: tensors of a multi-process
// save read from part files the root attribute "mtf_parts" lists (virtual
// datasets). A file gets the lowest version that describes it, so readers
// of version 1 still read one-file checkpoints.
constexpr int kFormatVersion = 1;
constexpr int kFormatVersionParts = 2;

// Variable names may hold '/', which HDF5 reads as groups; "w1" and its
// optimizer slot "w1/adam_m" cannot be a dataset and a group at once, so
// datasets sit at the root with '/' written as '.', and the attribute
// "mtf_name" keeps the name.
std::string dataset_name(const std::string& variable);
hid_t file_type(DType d);
hid_t memory_type(DType d);
// IoError (naming `where`) for an unknown dtype name.
DType parse_dtype(const std::string& s, const std::string& where);

// A region of a dataset: its own dataspace selection and a memory space.
struct Region {
  h5::Handle file_space, mem_space;
};
// The block of `dataset` (of logical shape `full`) at `begin` with `shape`.
Region region(hid_t dataset, const Shape& full, const std::vector<int64_t>& begin,
              const Shape& shape, const std::string& path);

// The raw-data extents of the named (non-virtual) datasets of the closed
// file at `path`, for its seal (integrity.h). The caller holds h5::Lock.
std::vector<Extent> data_extents(const std::string& path, const std::vector<std::string>& datasets);

}  // namespace mtf::checkpoint
