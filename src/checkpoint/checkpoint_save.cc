// Writing one checkpoint file: save_checkpoint, from one process or from
// every rank of a multi-process job. Format: docs/checkpoints.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>

#include "checkpoint/crc32c.h"
#include "checkpoint/files.h"
#include "checkpoint/format.h"
#include "checkpoint/h5.h"
#include "checkpoint/integrity.h"
#include "collectives/tags.h"
#include "core/check.h"
#include "mtf/checkpoint.h"
#include "mtf/collectives.h"
#include "mtf/errors.h"

namespace mtf {
namespace {

using checkpoint::crc32c;
using checkpoint::dataset_name;
using checkpoint::file_type;
using checkpoint::kFormat;
using checkpoint::kFormatVersion;
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

// The job's transport in a multi-process session, else null.
Transport* job_of(Session& session) { return session.config().process_transport.get(); }

// Messages of a multi-process save, on tags no program uses.
uint64_t save_tag(int k) {
  return collectives::tag_in(collectives::TagSpace::kCheckpointSave, static_cast<uint64_t>(k));
}

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

}  // namespace mtf
