// Writing a checkpoint: save_checkpoint, from one process, or from every
// rank of a multi-process job (each into its own part file at once, or all
// into one file in turn). Format: docs/checkpoints.md.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "checkpoint/agreement.h"
#include "checkpoint/files.h"
#include "checkpoint/format.h"
#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "checkpoint/parts.h"
#include "collectives/tags.h"
#include "core/check.h"
#include "core/crc32c.h"
#include "mtf/checkpoint.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

using checkpoint::agree;
using checkpoint::dataset_name;
using checkpoint::file_type;
using checkpoint::kFormat;
using checkpoint::kFormatVersion;
using checkpoint::kFormatVersionParts;
using checkpoint::memory_type;
using checkpoint::Region;
using checkpoint::region;
namespace h5 = checkpoint::h5;

std::atomic<int> g_temp_counter{0};

// Every variable's plan: its distinct slices over the whole mesh, their
// owners (the lowest processor holding each) and checksums.
struct VariablePlan {
  std::string name;
  Session::SliceLayout layout;
  DType dtype = float32;
  std::vector<uint32_t> crcs;  // per distinct slice
};

// Whether a variable's blocks go to the ranks' part files (the checkpoint
// file then maps them with a virtual dataset). Scalars and empty tensors
// stay in the checkpoint file: a virtual dataset needs a simple dataspace,
// and they hold at most one value.
bool stored_in_parts(const VariablePlan& p) {
  return p.layout.full.ndims() > 0 && p.layout.full.num_elements() > 0;
}

// The dataset holding the k-th block (counting every block of every
// variable, in plan order) in its owner's part file.
std::string part_dataset(size_t k) { return "b" + std::to_string(k); }

// Part files of a save, by owning rank ("" for a rank that owns no block
// stored in parts, which writes none).
struct Parts {
  std::vector<std::string> names;
  std::vector<std::string> present() const {
    std::vector<std::string> v;
    for (const std::string& n : names)
      if (!n.empty()) v.push_back(n);
    return v;
  }
};

// The job's transport in a multi-process session, else null.
Transport* job_of(Session& session) { return session.config().process_transport.get(); }

// Messages of a multi-process save, each kind on its own tag in a space no
// program uses.
enum class SaveMessage : uint64_t {
  kChecksums = 0,  // the allreduce of every block's checksum and the save's id
  kTurn = 1,       // save_in_turn's token: the previous writer is done
  kStatus = 2,     // checkpoint::agree(): a rank's outcome to rank 0
  kVerdict = 3,    // checkpoint::agree(): rank 0's verdict to every rank
};
uint64_t save_tag(SaveMessage m) {
  return collectives::tag_in(collectives::TagSpace::kCheckpointSave, static_cast<uint64_t>(m));
}
const checkpoint::AgreementTags kAgreementTags{save_tag(SaveMessage::kStatus),
                                               save_tag(SaveMessage::kVerdict)};

// Throws the error of a save that failed on rank `failed` (this rank is
// `me`): this rank's own as an IoError, another's as a PeerLostError, so
// that a launcher can tell the rank that caused the failure from those that
// only learned of it.
[[noreturn]] void throw_save_failed(const std::string& path, int failed, int me,
                                    const std::string& error) {
  if (failed == me) throw IoError("save_checkpoint \"" + path + "\" failed: " + error);
  throw PeerLostError("save_checkpoint \"" + path + "\" failed on rank " + std::to_string(failed) +
                      " (its own error says why)");
}

// The checkpoint file's header and datasets. With `parts`, variables stored
// in parts become virtual datasets reading each block from its owner's part
// file; every other dataset gets its storage now (so every writer finds it)
// and is never filled.
void write_header(hid_t file, Session& session, int64_t step,
                  const std::map<std::string, std::string>& metadata,
                  const std::vector<VariablePlan>& plans, const Parts* parts,
                  const std::string& tmp) {
  std::vector<std::string> names;
  for (const auto& p : plans) names.push_back(p.name);
  const std::vector<std::string> part_files = parts ? parts->present() : std::vector<std::string>{};
  h5::write_string(file, "mtf_format", kFormat, tmp);
  h5::write_int64s(file, "mtf_format_version",
                   {int64_t{part_files.empty() ? kFormatVersion : kFormatVersionParts}}, {1}, tmp);
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
  if (!part_files.empty()) h5::write_strings(file, checkpoint::kPartsAttribute, part_files, tmp);
  size_t k = 0;  // block count, as part_dataset() numbers blocks
  for (const VariablePlan& p : plans) {
    const Shape& full = p.layout.full;
    std::vector<hsize_t> sizes;
    for (const Dimension& d : full) sizes.push_back(static_cast<hsize_t>(d.size));
    h5::Handle space(sizes.empty()
                         ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(sizes.size()), sizes.data(), nullptr),
                     H5Sclose);
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!part_files.empty() && stored_in_parts(p)) {
      std::vector<hsize_t> count;
      for (const Dimension& d : p.layout.slice) count.push_back(static_cast<hsize_t>(d.size));
      h5::Handle source(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                        H5Sclose);
      for (size_t b = 0; b < p.layout.begins.size(); ++b) {
        h5::Handle target(H5Scopy(space), H5Sclose);
        const std::vector<hsize_t> start(p.layout.begins[b].begin(), p.layout.begins[b].end());
        h5::check_status(H5Sselect_hyperslab(target, H5S_SELECT_SET, start.data(), nullptr,
                                             count.data(), nullptr),
                         "selecting a block of \"" + p.name + "\"", tmp);
        const std::string& owner = parts->names.at(static_cast<size_t>(p.layout.owners[b]));
        h5::check_status(
            H5Pset_virtual(dcpl, target, owner.c_str(), part_dataset(k + b).c_str(), source),
            "mapping a block of \"" + p.name + "\" to \"" + owner + "\"", tmp);
      }
    } else {
      H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
      H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    }
    k += p.layout.begins.size();
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

// Calls f(plan, block index, global block number, slice) for every block
// this process owns and holds with elements.
template <typename F>
void for_owned_blocks(Session& session, const std::vector<VariablePlan>& plans, F&& f) {
  size_t k = 0;
  for (const VariablePlan& p : plans) {
    bool any = false;
    for (int64_t owner : p.layout.owners) any = any || writes(session, owner);
    if (any) {
      for (const Session::VariableSlice& s : session.variable_slices(p.name)) {
        for (size_t b = 0; b < p.layout.begins.size(); ++b) {
          if (!writes(session, p.layout.owners[b]) || p.layout.begins[b] != s.begin) continue;
          if (s.value.num_elements() > 0) f(p, b, k + b, s.value);
        }
      }
    }
    k += p.layout.begins.size();
  }
}

// Writes `value`, the block at `begin` of dataset `ds` (of logical shape
// `full`), in pieces of about 32 MiB along its first axis, asking the kernel
// after each to start writing the file's dirty pages to disk: the disk then
// works while the next piece is copied, and the fsync that ends the save
// waits for little more than the last piece.
void write_block(hid_t file, hid_t ds, const Shape& full, const std::vector<int64_t>& begin,
                 const HostTensor& value, DType dtype, const std::string& path,
                 const std::string& what) {
  const Shape& shape = value.shape();
  if (shape.ndims() == 0 || shape[0].size <= 1 || value.num_bytes() <= (32 << 20)) {
    Region r = region(ds, full, begin, shape, path);
    h5::check_status(
        H5Dwrite(ds, memory_type(dtype), r.mem_space, r.file_space, H5P_DEFAULT, value.raw_data()),
        "writing " + what, path);
  } else {
    const int64_t row_bytes = value.num_bytes() / shape[0].size;
    const int64_t rows = std::max<int64_t>(1, (int64_t{32} << 20) / row_bytes);
    std::vector<hsize_t> count, at(shape.ndims(), 0), file_at(begin.begin(), begin.end());
    for (const Dimension& d : shape) count.push_back(static_cast<hsize_t>(d.size));
    h5::Handle mem(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                   H5Sclose);
    h5::Handle space(h5::check(H5Dget_space(ds), "reading a dataspace", path), H5Sclose);
    void* handle = nullptr;
    const int fd = H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) >= 0 && handle
                       ? *static_cast<int*>(handle)
                       : -1;
    H5Eclear2(H5E_DEFAULT);
    for (int64_t r0 = 0; r0 < shape[0].size; r0 += rows) {
      std::vector<hsize_t> piece = count;
      piece[0] = static_cast<hsize_t>(std::min(rows, shape[0].size - r0));
      at[0] = static_cast<hsize_t>(r0);
      file_at[0] = static_cast<hsize_t>(begin[0] + r0);
      h5::check_status(
          H5Sselect_hyperslab(mem, H5S_SELECT_SET, at.data(), nullptr, piece.data(), nullptr),
          "selecting a piece of " + what, path);
      h5::check_status(H5Sselect_hyperslab(space, H5S_SELECT_SET, file_at.data(), nullptr,
                                           piece.data(), nullptr),
                       "selecting a piece of " + what, path);
      h5::check_status(H5Dwrite(ds, memory_type(dtype), mem, space, H5P_DEFAULT, value.raw_data()),
                       "writing " + what, path);
      if (fd >= 0)
        ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);  // a hint: errors show at fsync
    }
  }
}

// Writes the slices this process owns into the (existing) datasets of the
// checkpoint file; with `in_parts`, only those of variables not stored in
// part files.
void write_owned_blocks(hid_t file, Session& session, const std::vector<VariablePlan>& plans,
                        bool in_parts, const std::string& tmp) {
  for_owned_blocks(
      session, plans, [&](const VariablePlan& p, size_t b, size_t, const HostTensor& value) {
        if (in_parts && stored_in_parts(p)) return;
        h5::Handle ds(h5::check(H5Dopen2(file, dataset_name(p.name).c_str(), H5P_DEFAULT),
                                "opening dataset for variable \"" + p.name + "\"", tmp),
                      H5Dclose);
        write_block(file, ds, p.layout.full, p.layout.begins[b], value, p.dtype, tmp,
                    "variable \"" + p.name + "\"");
      });
}

// The checkpoint file's datasets that hold their own data.
std::vector<std::string> stored_datasets(const std::vector<VariablePlan>& plans, bool in_parts) {
  std::vector<std::string> names;
  for (const VariablePlan& p : plans)
    if (!in_parts || !stored_in_parts(p)) names.push_back(dataset_name(p.name));
  return names;
}

// Seals the closed file and flushes it to disk.
void seal_and_flush(const std::string& file, const std::vector<std::string>& datasets,
                    size_t reserve) {
  std::vector<checkpoint::Extent> extents;
  {
    h5::Lock lock;
    extents = checkpoint::data_extents(file, datasets);
  }
  checkpoint::seal(file, checkpoint::user_block_size(reserve), extents);
  checkpoint::fsync_path(file);
}

// Moves the finished file `tmp` to `path`, then removes the part files of
// the checkpoint it replaced (not this save's: their names differ).
void commit(const std::string& tmp, const std::string& path) {
  std::vector<std::string> replaced;
  if (checkpoint::file_exists(path)) {
    try {
      replaced = checkpoint::part_names(path);
    } catch (const IoError&) {
      // Not a readable checkpoint: no parts to follow.
    }
  }
  // The directory's entries for the parts are durable before the file that
  // names them can be.
  checkpoint::fsync_path(checkpoint::directory_of(path));
  checkpoint::durable_rename(tmp, path);
  for (const std::string& p : replaced)
    checkpoint::remove_file(checkpoint::directory_of(path) + "/" + p);
}

// This rank's part file: one dataset per block it owns of the variables
// stored in parts, sealed and flushed. Returns whether it wrote one.
void write_part(Session& session, const std::vector<VariablePlan>& plans,
                const std::string& part_path, const std::string& checkpoint_base) {
  std::vector<std::string> datasets;
  for_owned_blocks(session, plans, [&](const VariablePlan& p, size_t, size_t k, const HostTensor&) {
    if (stored_in_parts(p)) datasets.push_back(part_dataset(k));
  });
  {
    h5::Lock lock;
    h5::Handle file = h5::create_file(part_path, checkpoint::user_block_size(datasets.size()));
    h5::write_string(file, "mtf_format", checkpoint::kPartFormat, part_path);
    h5::write_string(file, "mtf_checkpoint", checkpoint_base, part_path);
    // Its own name, so that a reader tells a swapped or renamed part file
    // from a corrupted checkpoint.
    h5::write_string(file, checkpoint::kPartNameAttribute, checkpoint::base_name(part_path),
                     part_path);
    for_owned_blocks(
        session, plans, [&](const VariablePlan& p, size_t, size_t k, const HostTensor& value) {
          if (!stored_in_parts(p)) return;
          std::vector<hsize_t> count;
          for (const Dimension& d : value.shape()) count.push_back(static_cast<hsize_t>(d.size));
          h5::Handle space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                           H5Sclose);
          h5::Handle ds(h5::check(H5Dcreate2(file, part_dataset(k).c_str(), file_type(p.dtype),
                                             space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                  "creating a block of \"" + p.name + "\"", part_path),
                        H5Dclose);
          write_block(file, ds, value.shape(), std::vector<int64_t>(value.shape().ndims(), 0),
                      value, p.dtype, part_path, "a block of \"" + p.name + "\"");
        });
    file.close(part_path);
  }
  seal_and_flush(part_path, datasets, datasets.size());
}

// Every rank at once writes its part file, and rank 0 the checkpoint file
// mapping them; rank 0 renames it into place once every part is on disk.
void save_in_parts(Session& session, const std::string& path, int64_t step,
                   const std::map<std::string, std::string>& metadata,
                   const std::vector<VariablePlan>& plans, const Parts& parts,
                   const std::string& tmp) {
  Transport& job = *job_of(session);
  const int me = job.rank();
  const std::string dir = checkpoint::directory_of(path);
  const std::string& mine = parts.names[static_cast<size_t>(me)];
  bool wrote_part = false;
  bool ok = true;
  std::string error;
  try {
    if (!mine.empty()) {
      wrote_part = true;
      write_part(session, plans, dir + "/" + mine, checkpoint::base_name(path));
    }
    if (me == 0) {
      {
        h5::Lock lock;
        h5::Handle file = h5::create_file(tmp, checkpoint::user_block_size(plans.size()));
        write_header(file, session, step, metadata, plans, &parts, tmp);
        write_owned_blocks(file, session, plans, true, tmp);
        file.close(tmp);
      }
      seal_and_flush(tmp, stored_datasets(plans, true), plans.size());
    }
  } catch (const Error& e) {
    ok = false;
    error = e.what();
  }
  const int failed = agree(&job, ok, error, kAgreementTags, [&] { commit(tmp, path); });
  if (failed < 0) return;
  if (wrote_part) ::unlink((dir + "/" + mine).c_str());
  if (me == 0) ::unlink(tmp.c_str());
  throw_save_failed(path, failed, me, error);
}

// One file, written in turn: rank 0 creates it (header, every dataset,
// every block's checksum) and writes its own slices; each other rank then
// opens it and writes the slices it owns, passing a token along; rank 0
// seals, flushes and renames it. A single process just writes it.
void save_in_turn(Session& session, const std::string& path, int64_t step,
                  const std::map<std::string, std::string>& metadata,
                  const std::vector<VariablePlan>& plans, const std::string& tmp) {
  Transport* job = job_of(session);
  const int me = job ? job->rank() : 0;
  const int n = job ? job->size() : 1;
  // The turn token carries 1 for "all well so far", 0 when a writer failed.
  auto wait_turn = [&](int from) {
    int32_t ok = 1;
    job->recv(from, save_tag(SaveMessage::kTurn), &ok, sizeof(ok));
    return ok == 1;
  };
  bool ok = me == 0 || wait_turn(me - 1);
  std::string error;
  if (ok) {
    try {
      h5::Lock lock;
      if (me == 0) {
        h5::Handle file = h5::create_file(tmp, checkpoint::user_block_size(plans.size()));
        write_header(file, session, step, metadata, plans, nullptr, tmp);
        write_owned_blocks(file, session, plans, false, tmp);
        file.close(tmp);
      } else {
        h5::Handle file = h5::open_file(tmp, true);
        write_owned_blocks(file, session, plans, false, tmp);
        file.close(tmp);
      }
    } catch (const Error& e) {
      ok = false;
      error = e.what();
    }
  } else {
    error = "an earlier writer failed";
  }
  if (me + 1 < n) {
    const int32_t token = ok ? 1 : 0;
    job->send(me + 1, save_tag(SaveMessage::kTurn), &token, sizeof(token));
  }
  const int failed = agree(job, ok, error, kAgreementTags, [&] {
    seal_and_flush(tmp, stored_datasets(plans, false), plans.size());
    commit(tmp, path);
  });
  if (failed < 0) return;
  if (me == 0) ::unlink(tmp.c_str());
  throw_save_failed(path, failed, me, error);
}

}  // namespace

// Data never moves between processes; only the checksums are combined (an
// allreduce of a few bytes per slice), with rank 0's id for this save.
void save_checkpoint(Session& session, const std::string& path, int64_t step,
                     const std::map<std::string, std::string>& metadata,
                     const SaveOptions& options) {
  std::vector<VariablePlan> plans;
  std::map<std::string, std::string> datasets;
  for (const std::string& n : session.variable_names()) {
    if (std::find(options.skip.begin(), options.skip.end(), n) != options.skip.end()) continue;
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
  const int me = job ? job->rank() : 0;
  const int n = job ? job->size() : 1;
  // Checksums of the slices this process owns, then two words of the save's
  // id (rank 0's); all combined over the job.
  std::vector<int32_t> words;
  for (VariablePlan& p : plans) {
    const std::vector<Session::VariableSlice> local = session.variable_slices(p.name);
    p.dtype = local.at(0).value.dtype();
    for (const auto& s : local)
      for (size_t b = 0; b < p.layout.begins.size(); ++b)
        if (writes(session, p.layout.owners[b]) && p.layout.begins[b] == s.begin)
          p.crcs[b] = crc32c(s.value.raw_data(), s.value.num_bytes());
    for (uint32_t c : p.crcs) words.push_back(static_cast<int32_t>(c));
  }
  uint64_t save_id = 0;
  if (me == 0)
    save_id = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  words.push_back(static_cast<int32_t>(save_id >> 32));
  words.push_back(static_cast<int32_t>(save_id & 0xFFFFFFFFu));
  if (job) {
    job->begin_collective({0, "checkpoint", "checksums of " + checkpoint::base_name(path),
                           static_cast<int64_t>(words.size() * 4)});
    allreduce(*job, Group::all(n, me), words.data(), static_cast<int64_t>(words.size()), int32,
              ReduceOp::kSum, save_tag(SaveMessage::kChecksums));
    size_t k = 0;
    for (VariablePlan& p : plans)
      for (uint32_t& c : p.crcs) c = static_cast<uint32_t>(words[k++]);
    save_id = (static_cast<uint64_t>(static_cast<uint32_t>(words[k])) << 32) |
              static_cast<uint32_t>(words[k + 1]);
  }
  // All ranks agree on the temporary name; one job writes a directory.
  const std::string tmp =
      checkpoint::directory_of(path) + "/.tmp-" + checkpoint::base_name(path) +
      (job ? std::string("-job")
           : "-" + std::to_string(::getpid()) + "-" + std::to_string(g_temp_counter++));
  if (job && options.files == SaveOptions::Files::kPerRank) {
    Parts parts;
    parts.names.assign(static_cast<size_t>(n), "");
    for (const VariablePlan& p : plans) {
      if (!stored_in_parts(p)) continue;
      for (int64_t owner : p.layout.owners) {
        if (owner < 0 || owner >= n) {
          throw InternalError(detail::str_cat("save_checkpoint: slice owner ", owner,
                                              " outside the job's ", n, " ranks"));
        }
        parts.names[static_cast<size_t>(owner)] =
            checkpoint::part_name(checkpoint::base_name(path), static_cast<int>(owner), n, save_id);
      }
    }
    if (!parts.present().empty()) {
      save_in_parts(session, path, step, metadata, plans, parts, tmp);
      return;
    }
  }
  save_in_turn(session, path, step, metadata, plans, tmp);
}

}  // namespace mtf
