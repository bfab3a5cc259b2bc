// One checkpoint file: save_checkpoint, read_checkpoint_info,
// restore_checkpoint, read_checkpoint_variable. Format: docs/checkpoints.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>

#include "checkpoint/crc32c.h"
#include "checkpoint/files.h"
#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "core/check.h"
#include "kernels/kernels.h"
#include "mtf/checkpoint.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

using checkpoint::crc32c;
namespace h5 = checkpoint::h5;

constexpr const char* kFormat = "mtf-checkpoint";
constexpr int kFormatVersion = 1;

// Variable names may hold '/', which HDF5 reads as groups; "w1" and its
// optimizer slot "w1/adam_m" cannot be a dataset and a group at once, so
// datasets sit at the root with '/' written as '.', and the attribute
// "mtf_name" keeps the name.
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
  }
  return H5T_NATIVE_FLOAT;
}

DType parse_dtype(const std::string& s, const std::string& where) {
  if (s == "float32") return float32;
  if (s == "int32") return int32;
  if (s == "bfloat16") return bfloat16;
  throw IoError(where + ": unknown dtype \"" + s + "\"; the file is corrupted or from a newer mtf");
}

// A region of a dataset: its own dataspace selection and a memory space.
struct Region {
  h5::Handle file_space, mem_space;
};

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
    if (info_.format_version < 1 || info_.format_version > kFormatVersion) {
      throw IoError(detail::str_cat("\"", path, "\" is an mtf checkpoint of format version ",
                                    info_.format_version, "; this mtf reads versions 1 to ",
                                    kFormatVersion, " (a newer mtf wrote it?)"));
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
  }

  const CheckpointInfo& info() const { return info_; }
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }

  StoredVariable variable(const std::string& name) const {
    StoredVariable v;
    v.name = name;
    v.dataset = by_name_.at(name);
    h5::Handle ds(h5::check(H5Dopen2(file_, v.dataset.c_str(), H5P_DEFAULT),
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
    int64_t covered = 0;
    for (size_t b = 0; b < bdims[0]; ++b) {
      StoredVariable::Block blk;
      std::vector<Dimension> shape;
      int64_t n = 1;
      for (int i = 0; i < rank; ++i) {
        const int64_t begin = table[b * cols + i], size = table[b * cols + rank + i];
        if (begin < 0 || size < 0 || begin + size > static_cast<int64_t>(v.sizes[i])) {
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
      covered += n;
      v.blocks.push_back(std::move(blk));
    }
    if (covered != static_cast<int64_t>(v.shape().num_elements())) {
      throw IoError(where + ": its blocks do not cover the tensor exactly; the file is corrupted");
    }
    return v;
  }

  // Reads block b of v and checks its checksum.
  HostTensor read_block(const StoredVariable& v, size_t b) const {
    const StoredVariable::Block& blk = v.blocks[b];
    HostTensor t(blk.shape, v.dtype);
    if (t.num_elements() > 0) {
      h5::Handle ds(h5::check(H5Dopen2(file_, v.dataset.c_str(), H5P_DEFAULT),
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
  static int64_t scalar(const std::vector<int64_t>& v) {
    if (v.size() != 1) throw IoError("a header attribute is malformed; the file is corrupted");
    return v[0];
  }
  std::string path_;
  h5::Handle file_;
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

std::atomic<int> g_temp_counter{0};

// Every variable's plan: its distinct slices over the whole mesh, their
// owners (the lowest processor holding each) and checksums.
struct VariablePlan {
  std::string name;
  Session::SliceLayout layout;
  DType dtype = float32;
  std::vector<uint32_t> crcs;  // per distinct slice
};

// The job's transport in a multi-process session, else null.
Transport* job_of(Session& session) { return session.config().process_transport.get(); }

// Messages of a multi-process save, on tags no program uses.
uint64_t save_tag(int k) { return (uint64_t{3} << 40) + static_cast<uint64_t>(k); }

void write_header(hid_t file, Session& session, int64_t step,
                  const std::map<std::string, std::string>& metadata,
                  const std::vector<VariablePlan>& plans, const std::string& tmp) {
  std::vector<std::string> names;
  for (const auto& p : plans) names.push_back(p.name);
  h5::write_string(file, "mtf_format", kFormat, tmp);
  h5::write_int64s(file, "mtf_format_version", {kFormatVersion}, {1}, tmp);
  h5::write_int64s(file, "step", {step}, {1}, tmp);
  h5::write_int64s(file, "run_counter", {static_cast<int64_t>(session.run_counter())}, {1}, tmp);
  h5::write_string(file, "mesh_shape", session.config().mesh_shape.to_string(), tmp);
  h5::write_string(file, "layout", session.config().layout.to_string(), tmp);
  h5::write_strings(file, "variables", names, tmp);
  if (!metadata.empty()) {
    std::vector<std::string> keys, values;
    for (const auto& [k, v] : metadata) {
      keys.push_back(k);
      values.push_back(v);
    }
    h5::write_strings(file, "metadata_keys", keys, tmp);
    h5::write_strings(file, "metadata_values", values, tmp);
  }
  for (const VariablePlan& p : plans) {
    const Shape& full = p.layout.full;
    std::vector<hsize_t> sizes;
    for (const Dimension& d : full) sizes.push_back(static_cast<hsize_t>(d.size));
    h5::Handle space(sizes.empty()
                         ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(sizes.size()), sizes.data(), nullptr),
                     H5Sclose);
    // Storage allocated now (so every writer finds it), never filled.
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    h5::Handle ds(h5::check(H5Dcreate2(file, dataset_name(p.name).c_str(), file_type(p.dtype),
                                       space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                            "creating dataset for variable \"" + p.name + "\"", tmp),
                  H5Dclose);
    h5::write_string(ds, "mtf_name", p.name, tmp);
    if (!sizes.empty()) h5::write_strings(ds, "dims", full.names(), tmp);
    h5::write_string(ds, "dtype", dtype_name(p.dtype), tmp);
    const size_t rank = sizes.size(), cols = 2 * rank + 1;
    std::vector<int64_t> table;
    for (size_t b = 0; b < p.layout.begins.size(); ++b) {
      for (int64_t x : p.layout.begins[b]) table.push_back(x);
      for (const Dimension& d : p.layout.slice) table.push_back(d.size);
      table.push_back(p.crcs[b]);
    }
    h5::write_int64s(ds, "mtf_blocks", table, {p.layout.begins.size(), cols}, tmp);
  }
}

// Whether processor `owner`'s slices are written by this process: all of
// them in a single-process session, its own rank's in a job.
bool writes(Session& session, int64_t owner) {
  Transport* job = job_of(session);
  return !job || owner == job->rank();
}

// Writes the slices this process owns into the (existing) datasets.
void write_owned_blocks(hid_t file, Session& session, const std::vector<VariablePlan>& plans,
                        const std::string& tmp) {
  for (const VariablePlan& p : plans) {
    bool any = false;
    for (int64_t owner : p.layout.owners) any = any || writes(session, owner);
    if (!any) continue;
    h5::Handle ds(h5::check(H5Dopen2(file, dataset_name(p.name).c_str(), H5P_DEFAULT),
                            "opening dataset for variable \"" + p.name + "\"", tmp),
                  H5Dclose);
    for (const Session::VariableSlice& s : session.variable_slices(p.name)) {
      for (size_t b = 0; b < p.layout.begins.size(); ++b) {
        if (!writes(session, p.layout.owners[b]) || p.layout.begins[b] != s.begin) continue;
        if (s.value.num_elements() == 0) continue;
        Region r = region(ds, p.layout.full, s.begin, s.value.shape(), tmp);
        h5::check_status(H5Dwrite(ds, memory_type(p.dtype), r.mem_space, r.file_space, H5P_DEFAULT,
                                  s.value.raw_data()),
                         "writing variable \"" + p.name + "\"", tmp);
      }
    }
  }
}

// The raw-data extents of every dataset, for the seal.
std::vector<checkpoint::Extent> data_extents(const std::string& tmp,
                                             const std::vector<VariablePlan>& plans) {
  std::vector<checkpoint::Extent> extents;
  h5::Handle file = h5::open_file(tmp, false);
  for (const VariablePlan& p : plans) {
    h5::Handle ds(h5::check(H5Dopen2(file, dataset_name(p.name).c_str(), H5P_DEFAULT),
                            "opening dataset for variable \"" + p.name + "\"", tmp),
                  H5Dclose);
    const haddr_t offset = H5Dget_offset(ds);
    if (offset != HADDR_UNDEF && H5Dget_storage_size(ds) > 0)
      extents.push_back({offset, H5Dget_storage_size(ds)});
    H5Eclear2(H5E_DEFAULT);
  }
  file.close(tmp);
  return extents;
}

}  // namespace

// One file, written in turn: rank 0 creates it (header, every dataset,
// every block's checksum) and writes its own slices; each other rank then
// opens it and writes the slices it owns (replicas by their lowest holder),
// passing a token along; rank 0 seals, flushes and renames it. Data never
// moves between processes; only the checksums are combined (an allreduce of
// a few bytes per slice).
void save_checkpoint(Session& session, const std::string& path, int64_t step,
                     const std::map<std::string, std::string>& metadata) {
  std::vector<VariablePlan> plans;
  std::map<std::string, std::string> datasets;
  for (const std::string& n : session.variable_names()) {
    auto [it, fresh] = datasets.emplace(dataset_name(n), n);
    if (!fresh) {
      throw ValueError("save_checkpoint: variables \"" + it->second + "\" and \"" + n +
                       "\" would share the dataset name \"" + it->first +
                       "\" ('/' is stored as '.'); rename one of them");
    }
    VariablePlan p;
    p.name = n;
    p.layout = session.variable_slice_layout(n);
    p.crcs.assign(p.layout.begins.size(), 0);
    plans.push_back(std::move(p));
  }
  Transport* job = job_of(session);
  const int64_t me = job ? job->rank() : 0;
  const int n = job ? job->size() : 1;
  // Checksums of the slices this process owns; combined over the job.
  std::vector<int32_t> crcs;
  for (VariablePlan& p : plans) {
    const std::vector<Session::VariableSlice> local = session.variable_slices(p.name);
    p.dtype = local.at(0).value.dtype();
    for (const auto& s : local)
      for (size_t b = 0; b < p.layout.begins.size(); ++b)
        if (writes(session, p.layout.owners[b]) && p.layout.begins[b] == s.begin)
          p.crcs[b] = crc32c(s.value.raw_data(), s.value.num_bytes());
    for (uint32_t c : p.crcs) crcs.push_back(static_cast<int32_t>(c));
  }
  if (job && !crcs.empty()) {
    job->begin_collective({0, "checkpoint", "checksums of " + checkpoint::base_name(path),
                           static_cast<int64_t>(crcs.size() * 4)});
    allreduce(*job, Group::all(n, static_cast<int>(me)), crcs.data(),
              static_cast<int64_t>(crcs.size()), int32, ReduceOp::kSum, save_tag(0));
    size_t k = 0;
    for (VariablePlan& p : plans)
      for (uint32_t& c : p.crcs) c = static_cast<uint32_t>(crcs[k++]);
  }
  // All ranks agree on the temporary name; one job writes a directory.
  const std::string tmp =
      checkpoint::directory_of(path) + "/.tmp-" + checkpoint::base_name(path) +
      (job ? std::string("-job")
           : "-" + std::to_string(::getpid()) + "-" + std::to_string(g_temp_counter++));
  // The turn token carries 1 for "all well so far", 0 when a writer failed.
  auto pass = [&](int to, int32_t ok) {
    if (job && to != me) job->send(to, save_tag(1), &ok, sizeof(ok));
  };
  auto wait_turn = [&](int from) {
    int32_t ok = 1;
    if (job && from != me) job->recv(from, save_tag(1), &ok, sizeof(ok));
    return ok == 1;
  };
  bool ok = me == 0 || wait_turn(static_cast<int>(me - 1));
  std::string error;
  if (ok) {
    try {
      h5::Lock lock;
      if (me == 0) {
        h5::Handle file = h5::create_file(tmp, checkpoint::user_block_size(plans.size()));
        write_header(file, session, step, metadata, plans, tmp);
        write_owned_blocks(file, session, plans, tmp);
        file.close(tmp);
      } else {
        h5::Handle file = h5::open_file(tmp, true);
        write_owned_blocks(file, session, plans, tmp);
        file.close(tmp);
      }
    } catch (const Error& e) {
      ok = false;
      error = e.what();
    }
  }
  if (job) {
    pass(static_cast<int>((me + 1) % n), ok ? 1 : 0);
    if (me == 0) ok = wait_turn(n - 1) && ok;
  }
  if (me == 0) {
    try {
      if (!ok) throw IoError(error.empty() ? "another rank failed to write its slices" : error);
      std::vector<checkpoint::Extent> extents;
      {
        h5::Lock lock;
        extents = data_extents(tmp, plans);
      }
      checkpoint::seal(tmp, checkpoint::user_block_size(plans.size()), extents);
      checkpoint::fsync_path(tmp);
      checkpoint::durable_rename(tmp, path);
    } catch (const Error& e) {
      ::unlink(tmp.c_str());
      ok = false;
      if (error.empty()) error = e.what();
    }
    for (int r = 1; r < n; ++r) pass(r, ok ? 1 : 0);
  } else {
    ok = wait_turn(0) && ok;
  }
  if (!ok) {
    throw IoError("save_checkpoint \"" + path + "\" failed" +
                  (error.empty() ? std::string(" on another rank") : ": " + error));
  }
}

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
      if (v.dtype != probe.dtype()) {
        throw DTypeError("restore_checkpoint: variable \"" + var + "\" is " +
                         dtype_name(probe.dtype()) + " in the session but \"" + stored + "\" is " +
                         dtype_name(v.dtype) + " in \"" + path + "\"");
      }
      Staged s;
      s.variable = var;
      for (size_t b = 0; b < v.blocks.size(); ++b) {
        s.begins.push_back(v.blocks[b].begin);
        s.blocks.push_back(reader.read_block(v, b));
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
