// h5.h — a thin layer over HDF5's C API for the checkpoint code: handles
// that close themselves, every failure turned into an IoError that names
// the operation, the file and HDF5's own error stack, and typed attribute
// reads and writes. HDF5 (Debian's serial build) is not thread-safe, so every
// call happens under h5::Lock. Internal.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mtf::checkpoint::h5 {

// Held around every use of HDF5; also stops HDF5 printing errors itself.
class Lock {
 public:
  Lock();

 private:
  std::lock_guard<std::mutex> guard_;
};

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: used as the C API's hid_t
  // Closes now; IoError (with `path`) when HDF5 reports a failure, as a
  // file's close can when its last writes fail.
  void close(const std::string& path);
  // Closes now, ignoring failure; a file open for writing (a save that did
  // not reach close()) is emptied first.
  void reset();

 private:
  static void discard_if_writable(hid_t file);
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// IoError: "<what> in "<path>": <HDF5's messages>".
[[noreturn]] void fail(const std::string& what, const std::string& path);
hid_t check(hid_t id, const std::string& what, const std::string& path);
void check_status(herr_t status, const std::string& what, const std::string& path);

Handle file_access_latest_format();
Handle open_file(const std::string& path, bool write);
// A new file with a user block of `user_block` bytes (0: none).
Handle create_file(const std::string& path, uint64_t user_block);

bool has_attribute(hid_t obj, const char* name);
void write_string(hid_t obj, const char* name, const std::string& value, const std::string& path);
std::string read_string(hid_t obj, const char* name, const std::string& path);
void write_strings(hid_t obj, const char* name, const std::vector<std::string>& values,
                   const std::string& path);
std::vector<std::string> read_strings(hid_t obj, const char* name, const std::string& path);
// An int64 attribute of shape `dims` (row-major values).
void write_int64s(hid_t obj, const char* name, const std::vector<int64_t>& values,
                  const std::vector<hsize_t>& dims, const std::string& path);
std::vector<int64_t> read_int64s(hid_t obj, const char* name, std::vector<hsize_t>* dims,
                                 const std::string& path);

}  // namespace mtf::checkpoint::h5
