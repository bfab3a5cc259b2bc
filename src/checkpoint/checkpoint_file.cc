// Reading one checkpoint file: read_checkpoint_info, restore_checkpoint,
// read_checkpoint_variable. Format: docs/checkpoints.md.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "checkpoint/files.h"
#include "checkpoint/format.h"
#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/parts.h"
#include "core/check.h"
#include "core/crc32c.h"
#include "kernels/kernels.h"
#include "mtf/checkpoint.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

using checkpoint::dataset_name;
using checkpoint::file_type;
using checkpoint::kFormat;
using checkpoint::kFormatVersionParts;
using checkpoint::memory_type;
using checkpoint::parse_dtype;
using checkpoint::Region;
using checkpoint::region;
namespace h5 = checkpoint::h5;

std::string shape_text(const std::vector<std::string>& names, const std::vector<hsize_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    s += (i ? ", " : "") + (i < names.size() ? names[i] : std::string("?")) + ":" +
         std::to_string(sizes[i]);
  }
  return s + "]";
}

// A stored variable as found in a file.
struct StoredVariable {
  std::string name, dataset;
  std::vector<std::string> dims;
  std::vector<hsize_t> sizes;
  DType dtype = float32;
  struct Block {
    std::vector<int64_t> begin;
    Shape shape;
    uint32_t crc = 0;
  };
  std::vector<Block> blocks;
  Shape shape() const {
    std::vector<Dimension> d;
    for (size_t i = 0; i < sizes.size(); ++i)
      d.push_back({dims[i], static_cast<int64_t>(sizes[i])});
    return Shape(d);
  }
};

// An open checkpoint: its header and where each variable is.
class Reader {
 public:
  // The seal is checked before HDF5 reads a byte of the file.
  explicit Reader(const std::string& path)
      : path_(path), file_((checkpoint::verify_seal(path), h5::open_file(path, false))) {
    if (!h5::has_attribute(file_, "mtf_format") ||
        h5::read_string(file_, "mtf_format", path) != kFormat) {
      throw IoError("\"" + path +
                    "\" is an HDF5 file but not an mtf checkpoint (no \"mtf_format\" = \"" +
                    std::string(kFormat) + "\" attribute)");
    }
    std::vector<hsize_t> dims;
    info_.path = path;
    info_.format_version =
        static_cast<int>(scalar(h5::read_int64s(file_, "mtf_format_version", &dims, path)));
    if (info_.format_version < 1 || info_.format_version > kFormatVersionParts) {
      throw IoError(detail::str_cat("\"", path, "\" is an mtf checkpoint of format version ",
                                    info_.format_version, "; this mtf reads versions 1 to ",
                                    kFormatVersionParts, " (a newer mtf wrote it?)"));
    }
    info_.step = scalar(h5::read_int64s(file_, "step", &dims, path));
    info_.run_counter =
        static_cast<uint64_t>(scalar(h5::read_int64s(file_, "run_counter", &dims, path)));
    info_.mesh_shape = h5::read_string(file_, "mesh_shape", path);
    info_.layout = h5::read_string(file_, "layout", path);
    if (h5::has_attribute(file_, "metadata_keys")) {
      const auto keys = h5::read_strings(file_, "metadata_keys", path);
      const auto values = h5::read_strings(file_, "metadata_values", path);
      if (keys.size() != values.size()) throw IoError("\"" + path + "\": metadata is corrupted");
      for (size_t i = 0; i < keys.size(); ++i) info_.metadata[keys[i]] = values[i];
    }
    const std::vector<std::string> names = h5::read_strings(file_, "variables", path);
    for (const std::string& n : names) {
      info_.variables.push_back(n);
      by_name_[n] = dataset_name(n);
    }
    check_parts();
  }

  const CheckpointInfo& info() const { return info_; }
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }

  StoredVariable variable(const std::string& name) const {
    StoredVariable v;
    v.name = name;
    v.dataset = by_name_.at(name);
    h5::Handle ds(h5::check(H5Dopen2(file_, v.dataset.c_str(), dapl_),
                            "opening dataset \"" + v.dataset + "\"", path_),
                  H5Dclose);
    const std::string where = "variable \"" + name + "\" in \"" + path_ + "\"";
    h5::Handle space(h5::check(H5Dget_space(ds), "reading a dataspace", path_), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > 32) h5::fail("reading the shape of " + name, path_);
    v.sizes.assign(static_cast<size_t>(rank), 0);
    if (rank > 0) H5Sget_simple_extent_dims(space, v.sizes.data(), nullptr);
    if (rank > 0) v.dims = h5::read_strings(ds, "dims", path_);
    if (v.dims.size() != v.sizes.size()) {
      throw IoError(where + ": has " + std::to_string(v.dims.size()) + " dimension names for " +
                    std::to_string(rank) + " dimensions; the file is corrupted");
    }
    v.dtype = parse_dtype(h5::read_string(ds, "dtype", path_), where);
    std::vector<hsize_t> bdims;
    const std::vector<int64_t> table = h5::read_int64s(ds, "mtf_blocks", &bdims, path_);
    const size_t cols = 2 * static_cast<size_t>(rank) + 1;
    if (bdims.size() != 2 || bdims[1] != cols || table.size() != bdims[0] * cols) {
      throw IoError(where + ": its block table is malformed; the file is corrupted");
    }
    Shape full;
    try {
      full = v.shape();  // at most 2^62 elements, so no block's count overflows
    } catch (const ShapeError& e) {
      throw IoError(where + ": " + e.what() + "; the file is corrupted");
    }
    const int64_t total = full.num_elements();
    int64_t covered = 0;
    for (size_t b = 0; b < bdims[0]; ++b) {
      StoredVariable::Block blk;
      std::vector<Dimension> shape;
      int64_t n = 1;
      for (int i = 0; i < rank; ++i) {
        const int64_t begin = table[b * cols + i], size = table[b * cols + rank + i];
        if (begin < 0 || size < 0 || begin > full[i].size || size > full[i].size - begin) {
          throw IoError(where + ": a block lies outside the tensor; the file is corrupted");
        }
        blk.begin.push_back(begin);
        shape.push_back({v.dims[i], size});
        n *= size;
      }
      blk.shape = Shape(shape);
      const int64_t crc = table[b * cols + 2 * rank];
      if (crc < 0 || crc > 0xFFFFFFFFLL) throw IoError(where + ": a checksum is malformed");
      blk.crc = static_cast<uint32_t>(crc);
      if (n > total - covered) {
        throw IoError(where + ": its blocks cover more than the tensor; the file is corrupted");
      }
      covered += n;
      v.blocks.push_back(std::move(blk));
    }
    if (covered != total) {
      throw IoError(where + ": its blocks do not cover the tensor exactly; the file is corrupted");
    }
    return v;
  }

  // Reads block b of v and checks its checksum.
  HostTensor read_block(const StoredVariable& v, size_t b) const {
    const StoredVariable::Block& blk = v.blocks[b];
    HostTensor t(blk.shape, v.dtype);
    if (t.num_elements() > 0) {
      h5::Handle ds(h5::check(H5Dopen2(file_, v.dataset.c_str(), dapl_),
                              "opening dataset \"" + v.dataset + "\"", path_),
                    H5Dclose);
      Region r = region(ds, v.shape(), blk.begin, blk.shape, path_);
      h5::check_status(
          H5Dread(ds, memory_type(v.dtype), r.mem_space, r.file_space, H5P_DEFAULT, t.raw_data()),
          "reading variable \"" + v.name + "\" (truncated or corrupted?)", path_);
    }
    const uint32_t crc = crc32c(t.raw_data(), t.num_bytes());
    if (crc != blk.crc) {
      std::string at;
      for (int64_t x : blk.begin) at += (at.empty() ? "" : ",") + std::to_string(x);
      throw IoError(detail::str_cat("checksum mismatch in variable \"", v.name, "\" (block at [",
                                    at, "]) of \"", path_,
                                    "\": the file is corrupted; restore an older checkpoint"));
    }
    return t;
  }

 private:
  // Every part file the checkpoint lists is present and whole (its seal),
  // before HDF5 reads from one; virtual datasets find them beside the
  // checkpoint file, wherever the reader runs.
  void check_parts() {
    const std::string dir = checkpoint::directory_of(path_);
    info_.files = {path_};
    if (h5::has_attribute(file_, checkpoint::kPartsAttribute)) {
      for (const std::string& part : checkpoint::read_part_names(file_, path_)) {
        const std::string p = dir + "/" + part;
        if (!checkpoint::file_exists(p)) {
          throw IoError("checkpoint \"" + path_ + "\" is missing its part file \"" + p +
                        "\": a checkpoint saved by a multi-process job is its file plus the part "
                        "files beside it (CheckpointInfo::files); copy or move them together");
        }
        checkpoint::verify_seal(p);
        checkpoint::check_part_identity(p, path_);
        info_.files.push_back(p);
      }
    } else if (info_.format_version >= kFormatVersionParts) {
      throw IoError("\"" + path_ +
                    "\" is of format version 2 but lists no part files; the file is "
                    "corrupted");
    }
    dapl_ = h5::Handle(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
    h5::check_status(H5Pset_virtual_prefix(dapl_, dir.c_str()), "setting the part files' directory",
                     path_);
  }

  static int64_t scalar(const std::vector<int64_t>& v) {
    if (v.size() != 1) throw IoError("a header attribute is malformed; the file is corrupted");
    return v[0];
  }
  std::string path_;
  h5::Handle file_;
  h5::Handle dapl_;  // dataset access: where virtual datasets' part files are
  CheckpointInfo info_;
  std::map<std::string, std::string> by_name_;
};

// Copies the part of `src` (at `src_begin` in the full tensor) that overlaps
// `dst` (at `dst_begin`) into dst.
void copy_overlap(const HostTensor& src, const std::vector<int64_t>& src_begin, HostTensor& dst,
                  const std::vector<int64_t>& dst_begin) {
  const Shape& ss = src.shape();
  const Shape& ds = dst.shape();
  if (ss.ndims() == 0) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.num_bytes());
    return;
  }
  std::vector<int64_t> in_src(ss.ndims()), in_dst(ss.ndims());
  std::vector<Dimension> dims;
  for (int i = 0; i < ss.ndims(); ++i) {
    const int64_t lo = std::max(src_begin[i], dst_begin[i]);
    const int64_t hi = std::min(src_begin[i] + ss[i].size, dst_begin[i] + ds[i].size);
    if (hi <= lo) return;
    dims.push_back({ss[i].name, hi - lo});
    in_src[i] = lo - src_begin[i];
    in_dst[i] = lo - dst_begin[i];
  }
  const Shape overlap(dims);
  if (overlap == ss && overlap == ds) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.num_bytes());
    return;
  }
  kernels::insert_block(dst, in_dst, kernels::block_of(src, in_src, overlap));
}

}  // namespace

CheckpointInfo read_checkpoint_info(const std::string& path) {
  h5::Lock lock;
  return Reader(path).info();
}

HostTensor read_checkpoint_variable(const std::string& path, const std::string& name) {
  h5::Lock lock;
  Reader reader(path);
  if (!reader.has(name)) {
    throw ValueError("checkpoint \"" + path + "\" has no variable \"" + name + "\"");
  }
  const StoredVariable v = reader.variable(name);
  HostTensor full(v.shape(), v.dtype);
  const std::vector<int64_t> zero(v.sizes.size(), 0);
  for (size_t b = 0; b < v.blocks.size(); ++b)
    copy_overlap(reader.read_block(v, b), v.blocks[b].begin, full, zero);
  return full;
}

CheckpointInfo restore_checkpoint(Session& session, const std::string& path,
                                  const RestoreOptions& options) {
  // Everything is read and checked before any variable changes.
  struct Staged {
    std::string variable;
    std::vector<std::vector<int64_t>> begins;
    std::vector<HostTensor> blocks;
  };
  std::vector<Staged> staged;
  CheckpointInfo info;
  {
    h5::Lock lock;
    Reader reader(path);
    info = reader.info();
    std::vector<std::string> wanted =
        options.only.empty() ? session.variable_names() : options.only;
    const std::vector<std::string> all = session.variable_names();
    const std::set<std::string> known(all.begin(), all.end());
    for (const auto& [var, stored] : options.rename) {
      if (!known.count(var)) {
        throw ValueError("restore_checkpoint: rename names \"" + var +
                         "\", which is not a variable of the session");
      }
    }
    for (const std::string& var : wanted) {
      if (!known.count(var)) {
        throw ValueError("restore_checkpoint: \"" + var + "\" is not a variable of the session");
      }
      auto it = options.rename.find(var);
      const std::string stored = it == options.rename.end() ? var : it->second;
      if (!reader.has(stored)) {
        if (options.allow_missing) continue;
        std::string have;
        for (size_t i = 0; i < info.variables.size() && i < 12; ++i)
          have += (i ? ", " : "") + info.variables[i];
        throw ValueError("checkpoint \"" + path + "\" has no variable \"" + stored +
                         "\" (for the session's variable \"" + var + "\"); it has: " + have +
                         (info.variables.size() > 12 ? ", ..." : "") +
                         ". Use RestoreOptions::rename, ::only or ::allow_missing for a partial "
                         "restore");
      }
      const StoredVariable v = reader.variable(stored);
      const std::vector<Session::VariableSlice> current = session.variable_slices(var);
      const HostTensor& probe = current[0].value;
      const Shape want = session.variable_slice_layout(var).full;
      if (!(v.shape() == want)) {
        throw ShapeError("restore_checkpoint: variable \"" + var + "\" is " + want.to_string() +
                         " in the session but \"" + stored + "\" is " +
                         shape_text(v.dims, v.sizes) + " in \"" + path + "\"");
      }
      // float32 and bfloat16 restore into each other (rounded to nearest
      // even, or exact); integers only into integers.
      if (v.dtype != probe.dtype() && !(is_floating(v.dtype) && is_floating(probe.dtype()))) {
        throw DTypeError("restore_checkpoint: variable \"" + var + "\" is " +
                         dtype_name(probe.dtype()) + " in the session but \"" + stored + "\" is " +
                         dtype_name(v.dtype) + " in \"" + path + "\"");
      }
      Staged s;
      s.variable = var;
      for (size_t b = 0; b < v.blocks.size(); ++b) {
        s.begins.push_back(v.blocks[b].begin);
        s.blocks.push_back(reader.read_block(v, b).as_dtype(probe.dtype()));
      }
      staged.push_back(std::move(s));
    }
  }
  for (const Staged& s : staged) {
    session.set_variable_slices(
        s.variable, [&](const std::vector<int64_t>& begin, HostTensor& slice) {
          for (size_t b = 0; b < s.blocks.size(); ++b) {
            if (s.begins[b] == begin && s.blocks[b].shape() == slice.shape()) {
              slice = s.blocks[b];  // the same layout: share the block read
              return;
            }
          }
          for (size_t b = 0; b < s.blocks.size(); ++b)
            copy_overlap(s.blocks[b], s.begins[b], slice, begin);
        });
  }
  if (options.restore_run_counter) session.set_run_counter(info.run_counter);
  return info;
}

}  // namespace mtf
