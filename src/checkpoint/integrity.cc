#include "checkpoint/integrity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "checkpoint/files.h"
#include "core/bytes.h"
#include "core/crc32c.h"
#include "mtf/errors.h"

namespace mtf::checkpoint {
namespace {

constexpr char kMagic[8] = {'M', 'T', 'F', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;
// magic, version, header bytes, user block, file size, extent count.
constexpr size_t kFixed = 8 + 4 + 4 + 8 + 8 + 8;

class Fd {
 public:
  Fd(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void read_at(int fd, void* buf, size_t n, uint64_t off, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done, off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw IoError("reading \"" + path + "\" failed: " +
                    (r < 0 ? std::string(std::strerror(errno)) : "unexpected end of file") +
                    " (truncated?)");
    }
    done += static_cast<size_t>(r);
  }
}

// CRC of [from, to) of the file, skipping the data extents.
uint32_t metadata_crc(int fd, uint64_t from, uint64_t to, const std::vector<Extent>& data,
                      const std::string& path) {
  std::vector<char> buf(1 << 20);
  uint32_t crc = 0;
  uint64_t pos = from;
  auto add = [&](uint64_t a, uint64_t b) {
    while (a < b) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(b - a, buf.size()));
      read_at(fd, buf.data(), n, a, path);
      crc = crc32c(buf.data(), n, crc);
      a += n;
    }
  };
  for (const Extent& e : data) {
    add(pos, e.offset);
    pos = e.offset + e.size;
  }
  add(pos, to);
  return crc;
}

}  // namespace

uint64_t user_block_size(size_t extents) {
  const uint64_t need = kFixed + 16 * extents + 8;
  uint64_t size = 512;
  while (size < need) size *= 2;
  return size;
}

void seal(const std::string& path, uint64_t user_block, std::vector<Extent> data) {
  std::sort(data.begin(), data.end(),
            [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
  Fd fd(path, O_RDWR);
  if (fd.get() < 0)
    throw IoError("opening \"" + path + "\" to seal it failed: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw IoError("stat of \"" + path + "\" failed");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t prev = user_block;
  for (const Extent& e : data) {
    if (e.offset < prev || e.offset + e.size > size) {
      throw IoError("sealing \"" + path + "\": dataset extents overlap or exceed the file");
    }
    prev = e.offset + e.size;
  }
  std::vector<char> h;
  h.insert(h.end(), kMagic, kMagic + 8);
  detail::append<uint32_t>(h, kVersion);
  detail::append<uint32_t>(h, static_cast<uint32_t>(kFixed + 16 * data.size() + 8));
  detail::append<uint64_t>(h, user_block);
  detail::append<uint64_t>(h, size);
  detail::append<uint64_t>(h, data.size());
  for (const Extent& e : data) {
    detail::append<uint64_t>(h, e.offset);
    detail::append<uint64_t>(h, e.size);
  }
  // Everything after the header: the rest of the user block, HDF5's metadata.
  detail::append<uint32_t>(h, metadata_crc(fd.get(), h.size() + 8, size, data, path));
  detail::append<uint32_t>(h, crc32c(h.data(), h.size()));
  if (h.size() > user_block) throw IoError("sealing \"" + path + "\": the user block is too small");
  if (::pwrite(fd.get(), h.data(), h.size(), 0) != static_cast<ssize_t>(h.size())) {
    throw IoError("writing the header of \"" + path + "\" failed: " + std::strerror(errno));
  }
}

void verify_seal(const std::string& path) {
  require_regular_file(path);
  Fd fd(path, O_RDONLY | O_NONBLOCK);  // a FIFO swapped in after the check cannot block
  if (fd.get() < 0) {
    throw IoError("cannot open checkpoint \"" + path + "\": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw IoError("\"" + path + "\" is not a regular file, so not an mtf checkpoint");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  char fixed[kFixed];
  if (size < kFixed + 8) {
    throw IoError("\"" + path + "\" is not an mtf checkpoint: it has only " + std::to_string(size) +
                  " bytes (truncated?)");
  }
  read_at(fd.get(), fixed, kFixed, 0, path);
  if (std::memcmp(fixed, kMagic, 8) != 0) {
    static const char hdf5[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    throw IoError("\"" + path + "\" is not an mtf checkpoint" +
                  (std::memcmp(fixed, hdf5, 8) == 0
                       ? std::string(" (it is a plain HDF5 file, without mtf's header)")
                       : std::string(" (or its header is corrupted)")));
  }
  const uint32_t version = detail::load<uint32_t>(fixed + 8);
  const uint32_t header_bytes = detail::load<uint32_t>(fixed + 12);
  const uint64_t user_block = detail::load<uint64_t>(fixed + 16);
  const uint64_t recorded = detail::load<uint64_t>(fixed + 24);
  const uint64_t n = detail::load<uint64_t>(fixed + 32);
  if (version != kVersion || n > (1u << 24) || header_bytes != kFixed + 16 * n + 8 ||
      header_bytes > user_block || user_block > size) {
    throw IoError("the header of checkpoint \"" + path +
                  "\" is corrupted (or from a newer mtf); restore an older checkpoint");
  }
  std::vector<char> h(header_bytes);
  read_at(fd.get(), h.data(), header_bytes, 0, path);
  if (detail::load<uint32_t>(h.data() + header_bytes - 4) != crc32c(h.data(), header_bytes - 4)) {
    throw IoError("the header of checkpoint \"" + path + "\" is corrupted (checksum mismatch)");
  }
  if (recorded != size) {
    throw IoError("checkpoint \"" + path + "\" is " + std::to_string(size) +
                  " bytes but was written with " + std::to_string(recorded) +
                  (size < recorded ? ": it is truncated" : ": it was changed") +
                  "; restore an older checkpoint");
  }
  std::vector<Extent> data(n);
  for (uint64_t i = 0; i < n; ++i) {
    data[i].offset = detail::load<uint64_t>(h.data() + kFixed + 16 * i);
    data[i].size = detail::load<uint64_t>(h.data() + kFixed + 16 * i + 8);
  }
  const uint32_t want = detail::load<uint32_t>(h.data() + header_bytes - 8);
  if (metadata_crc(fd.get(), header_bytes, size, data, path) != want) {
    throw IoError("checkpoint \"" + path +
                  "\" is corrupted (its HDF5 metadata fails the checksum); restore an older "
                  "checkpoint");
  }
}

}  // namespace mtf::checkpoint
