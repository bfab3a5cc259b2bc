// integrity.h — a whole-file seal for checkpoint files, so that any
// truncation or flipped bit is found before HDF5 parses the file.
//
// The file starts with an HDF5 user block (which HDF5 and h5py skip) holding
// a header: magic, the file's size, the extents of the datasets' raw data,
// a CRC-32C of every byte after the header outside those extents (the rest
// of the user block and HDF5's metadata), and a CRC of the header itself. Raw data is covered by
// the per-block checksums of each variable, so verifying costs a pass over the metadata only.
// Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtf::checkpoint {

struct Extent {
  uint64_t offset = 0, size = 0;
};

// The user block to reserve for a file with up to `extents` data extents (a
// power of two, at least 512, as HDF5 requires).
uint64_t user_block_size(size_t extents);
// Writes the header into the (closed) file's user block.
void seal(const std::string& path, uint64_t user_block, std::vector<Extent> data);
// IoError unless the file is whole and unchanged since seal(): not an mtf
// checkpoint, truncated, or corrupted, each said plainly.
void verify_seal(const std::string& path);

}  // namespace mtf::checkpoint
