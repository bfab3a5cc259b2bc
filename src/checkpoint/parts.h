// parts.h — the part files of a checkpoint that every rank of a job wrote at
// once: their names, the list a checkpoint file keeps of them, and removing
// a checkpoint or a crashed save's leftovers as one set of files.
//
// A part file is named "<checkpoint>.part<r>-of-<n>.<save id>", beside the
// checkpoint file; the save id (16 hex digits, chosen per save) keeps the
// parts of two saves to one path apart. Part names never end in ".h5", so
// nothing that lists checkpoints takes one for a checkpoint. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/h5.h"

namespace mtf::checkpoint {

// The root attribute of a checkpoint file listing its part files.
constexpr const char* kPartsAttribute = "mtf_parts";
// The `mtf_format` of a part file.
constexpr const char* kPartFormat = "mtf-checkpoint-part";
// The root attribute of a part file holding its own file name (files from
// before it have none).
constexpr const char* kPartNameAttribute = "mtf_part_name";
// IoError when the part file at `path`, listed by `checkpoint` under its
// own file name, says it is another part (swapped or renamed files). The
// caller holds h5::Lock.
void check_part_identity(const std::string& path, const std::string& checkpoint);

std::string part_name(const std::string& checkpoint_base, int rank, int ranks, uint64_t save_id);
// The checkpoint base name a part file's name belongs to; "" when `name` is
// not a part file's name.
std::string checkpoint_of_part(const std::string& name);
// The part file names the checkpoint at `path` lists (empty for a checkpoint
// in one file). IoError when the file cannot be read as HDF5, or when a
// listed name is not a part file's name (a path, say).
std::vector<std::string> part_names(const std::string& path);
// The same of an open checkpoint file (the caller holds h5::Lock).
std::vector<std::string> read_part_names(hid_t file, const std::string& path);
// Removes the checkpoint file, then its part files (a crash in between
// leaves only parts that nothing lists, which remove_leftovers removes).
void remove_checkpoint(const std::string& path);
// Removes what crashed saves left in `dir`: temporary files (".tmp-*") and
// part files that no checkpoint file in `dir` lists. Must not run while a
// save into `dir` is under way.
void remove_leftovers(const std::string& dir);

}  // namespace mtf::checkpoint
