#include "checkpoint/h5.h"

#include <unistd.h>

#include "checkpoint/files.h"
#include "mtf/errors.h"

namespace mtf::checkpoint::h5 {
namespace {

// HDF5's exit handler closes what is still open, and crashes on a file
// whose close failed (a write refused by a full disk or a size limit; HDF5
// 1.10). Every file here is closed by the code that opened it, so the
// handler has nothing to do: it is not installed, before HDF5 starts.
const bool kNoExitHandler = (H5dont_atexit(), true);

std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

herr_t collect(unsigned, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (e->desc && *e->desc) *s += std::string(s->empty() ? "" : "; ") + e->desc;
  return 0;
}

// HDF5's messages, or when the system refused a write (the last message
// carries "errno = N, error message = '...'") just the system's reason.
std::string error_stack() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &s);
  H5Eclear2(H5E_DEFAULT);
  const std::string key = "error message = '";
  const size_t at = s.find(key);
  if (at != std::string::npos) {
    const size_t end = s.find('\'', at + key.size());
    if (end != std::string::npos) {
      std::string reason = s.substr(at + key.size(), end - at - key.size());
      if (s.find("errno = 28,") != std::string::npos)
        reason += " (free space there, or save elsewhere; earlier checkpoints are untouched)";
      return reason;
    }
  }
  return s.empty() ? "no detail from HDF5" : s;
}

Handle attribute(hid_t obj, const char* name, const std::string& path) {
  if (!has_attribute(obj, name)) {
    throw IoError("\"" + path + "\" lacks the attribute \"" + std::string(name) +
                  "\"; it is not a complete mtf checkpoint");
  }
  return Handle(
      check(H5Aopen(obj, name, H5P_DEFAULT), std::string("opening attribute ") + name, path),
      H5Aclose);
}

Handle vlen_string_type() {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

}  // namespace

Lock::Lock() : guard_(hdf5_mutex()) { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  // A file still open for writing here was not closed by close(): its
  // save failed, and HDF5's closing flush may fail too: discarded first.
  if (id_ >= 0 && close_ == H5Fclose) discard_if_writable(id_);
  if (id_ >= 0 && close_) close_(id_);
  id_ = -1;
}

void Handle::close(const std::string& path) {
  if (id_ < 0 || !close_) return;
  // A file's last writes can fail in the flush (a full disk). A failed
  // H5Fclose leaves HDF5 half-closed, and its exit handler then crashes:
  // flush first, and on failure discard the file before closing it.
  if (close_ == H5Fclose && H5Fflush(id_, H5F_SCOPE_LOCAL) < 0) {
    const std::string why = error_stack();
    reset();
    throw IoError("writing \"" + path + "\" failed: " + why);
  }
  const herr_t s = close_(id_);
  id_ = -1;
  check_status(s, "closing", path);
}

void Handle::discard_if_writable(hid_t file) {
  unsigned intent = 0;
  if (H5Fget_intent(file, &intent) < 0 || !(intent & H5F_ACC_RDWR)) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  // Emptied, so that on a full disk HDF5's closing flush finds room (its
  // metadata lands in a sparse file the caller removes).
  void* fd = nullptr;
  if (H5Fget_vfd_handle(file, H5P_DEFAULT, &fd) >= 0 && fd) {
    if (::ftruncate(*static_cast<int*>(fd), 0) != 0) {
      // Nothing freed; the close may fail, which the exit no longer minds.
    }
  }
  H5Eclear2(H5E_DEFAULT);
}

void fail(const std::string& what, const std::string& path) {
  throw IoError(what + " in \"" + path + "\" failed: " + error_stack());
}

hid_t check(hid_t id, const std::string& what, const std::string& path) {
  if (id < 0) fail(what, path);
  return id;
}

void check_status(herr_t status, const std::string& what, const std::string& path) {
  if (status < 0) fail(what, path);
}

Handle file_access_latest_format() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // The latest format checksums its metadata, so corruption is detected.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  return fapl;
}

Handle open_file(const std::string& path, bool write) {
  checkpoint::require_regular_file(path);  // a FIFO would block HDF5's first read
  Handle fapl = file_access_latest_format();
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw IoError("cannot open checkpoint \"" + path + "\": it does not exist or is not readable");
  }
  if (is == 0) {
    throw IoError("\"" + path +
                  "\" is not an HDF5 file, so not an mtf checkpoint (or it is "
                  "truncated or corrupted at its start)");
  }
  return Handle(check(H5Fopen(path.c_str(), write ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl),
                      "opening the checkpoint (truncated or corrupted?)", path),
                H5Fclose);
}

Handle create_file(const std::string& path, uint64_t user_block) {
  Handle fapl = file_access_latest_format();
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  if (user_block) check_status(H5Pset_userblock(fcpl, user_block), "reserving a user block", path);
  return Handle(check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl), "creating", path),
                H5Fclose);
}

bool has_attribute(hid_t obj, const char* name) {
  const htri_t r = H5Aexists(obj, name);
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

void write_string(hid_t obj, const char* name, const std::string& value, const std::string& path) {
  write_strings(obj, name, {value}, path);
}

std::string read_string(hid_t obj, const char* name, const std::string& path) {
  std::vector<std::string> v = read_strings(obj, name, path);
  if (v.size() != 1) {
    throw IoError("attribute \"" + std::string(name) + "\" of \"" + path +
                  "\" should hold one string; the file is corrupted");
  }
  return v[0];
}

void write_strings(hid_t obj, const char* name, const std::vector<std::string>& values,
                   const std::string& path) {
  Handle type = vlen_string_type();
  const hsize_t n = values.size();
  Handle space(n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle attr(check(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                    std::string("creating attribute ") + name, path),
              H5Aclose);
  std::vector<const char*> ptrs;
  for (const auto& s : values) ptrs.push_back(s.c_str());
  if (!ptrs.empty())
    check_status(H5Awrite(attr, type, ptrs.data()), std::string("writing attribute ") + name, path);
}

std::vector<std::string> read_strings(hid_t obj, const char* name, const std::string& path) {
  Handle attr = attribute(obj, name, path);
  Handle ftype(check(H5Aget_type(attr), "reading a type", path), H5Tclose);
  if (H5Tget_class(ftype) != H5T_STRING || H5Tis_variable_str(ftype) <= 0) {
    throw IoError("attribute \"" + std::string(name) + "\" of \"" + path +
                  "\" is not a string; the file is not an mtf checkpoint or is corrupted");
  }
  Handle space(check(H5Aget_space(attr), "reading a dataspace", path), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0 || n > (1 << 24)) fail(std::string("reading attribute ") + name, path);
  std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
  Handle type = vlen_string_type();
  if (n > 0)
    check_status(H5Aread(attr, type, ptrs.data()), std::string("reading attribute ") + name, path);
  std::vector<std::string> out;
  for (char* p : ptrs) out.emplace_back(p ? p : "");
  if (n > 0) H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
  return out;
}

void write_int64s(hid_t obj, const char* name, const std::vector<int64_t>& values,
                  const std::vector<hsize_t>& dims, const std::string& path) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle attr(check(H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                    std::string("creating attribute ") + name, path),
              H5Aclose);
  check_status(H5Awrite(attr, H5T_NATIVE_INT64, values.data()),
               std::string("writing attribute ") + name, path);
}

std::vector<int64_t> read_int64s(hid_t obj, const char* name, std::vector<hsize_t>* dims,
                                 const std::string& path) {
  Handle attr = attribute(obj, name, path);
  Handle ftype(check(H5Aget_type(attr), "reading a type", path), H5Tclose);
  if (H5Tget_class(ftype) != H5T_INTEGER) {
    throw IoError("attribute \"" + std::string(name) + "\" of \"" + path +
                  "\" is not an integer; the file is corrupted");
  }
  Handle space(check(H5Aget_space(attr), "reading a dataspace", path), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > 8) fail(std::string("reading attribute ") + name, path);
  dims->assign(static_cast<size_t>(rank), 0);
  if (rank > 0) H5Sget_simple_extent_dims(space, dims->data(), nullptr);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0 || n > (1 << 26)) fail(std::string("reading attribute ") + name, path);
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (n > 0)
    check_status(H5Aread(attr, H5T_NATIVE_INT64, v.data()),
                 std::string("reading attribute ") + name, path);
  return v;
}

}  // namespace mtf::checkpoint::h5
