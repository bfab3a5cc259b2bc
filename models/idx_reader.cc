#include "models/idx_reader.h"

#include <zlib.h>

#include <filesystem>
#include <memory>

#include "mtf/errors.h"

namespace mtf::models {
namespace {

// gzread reads plain files too, so one reader serves .gz and raw IDX.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path) {
    if (!std::filesystem::exists(path)) {
      throw IoError("cannot open \"" + path + "\": no such file");
    }
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) throw IoError("cannot open \"" + path + "\" for reading");
  }
  ~GzFile() {
    if (f_) gzclose(f_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  void read(void* dst, size_t n, const char* what) {
    auto* p = static_cast<unsigned char*>(dst);
    size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(f_, p + done, chunk);
      if (got < 0) {
        int err = 0;
        const char* msg = gzerror(f_, &err);
        throw IoError("\"" + path_ + "\" is corrupt while reading its " + what + ": " + msg);
      }
      if (got == 0) {
        throw IoError("\"" + path_ + "\" is truncated: its " + what + " needs " +
                      std::to_string(n) + " bytes but only " + std::to_string(done) +
                      " remain (re-install the data set)");
      }
      done += static_cast<size_t>(got);
    }
  }

  uint32_t read_be32(const char* what) {
    unsigned char b[4];
    read(b, 4, what);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile f_ = nullptr;
};

void check_magic(const GzFile& f, uint32_t magic, uint32_t expected, const char* kind) {
  if (magic != expected) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "\"%s\" is not an IDX %s file: magic number 0x%08x, expected 0x%08x",
                  f.path().c_str(), kind, magic, expected);
    throw IoError(buf);
  }
}

std::string find_file(const std::string& dir, const std::string& base) {
  if (!std::filesystem::is_directory(dir)) {
    throw IoError("data directory \"" + dir +
                  "\" does not exist (install Debian's dataset-fashion-mnist package or pass "
                  "--data_dir)");
  }
  for (const std::string& name : {base + ".gz", base}) {
    std::string p = (std::filesystem::path(dir) / name).string();
    if (std::filesystem::exists(p)) return p;
  }
  throw IoError("data directory \"" + dir + "\" has neither " + base + ".gz nor " + base);
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  GzFile f(path);
  check_magic(f, f.read_be32("header"), 0x00000803u, "image (idx3-ubyte)");
  IdxImages r;
  r.count = f.read_be32("header");
  r.rows = f.read_be32("header");
  r.cols = f.read_be32("header");
  if (r.rows <= 0 || r.cols <= 0 || r.rows > 4096 || r.cols > 4096 || r.count > (1 << 26)) {
    throw IoError("\"" + path + "\" has an implausible header: " + std::to_string(r.count) +
                  " images of " + std::to_string(r.rows) + "x" + std::to_string(r.cols));
  }
  r.pixels.resize(static_cast<size_t>(r.count * r.rows * r.cols));
  f.read(r.pixels.data(), r.pixels.size(), "pixels");
  return r;
}

IdxLabels read_idx_labels(const std::string& path) {
  GzFile f(path);
  check_magic(f, f.read_be32("header"), 0x00000801u, "label (idx1-ubyte)");
  IdxLabels r;
  r.count = f.read_be32("header");
  if (r.count > (1 << 26)) {
    throw IoError("\"" + path + "\" has an implausible header: " + std::to_string(r.count) +
                  " labels");
  }
  r.labels.resize(static_cast<size_t>(r.count));
  f.read(r.labels.data(), r.labels.size(), "labels");
  return r;
}

Dataset load_mnist_split(const std::string& dir, const std::string& split) {
  Dataset d;
  const std::string ip = find_file(dir, split + "-images-idx3-ubyte");
  const std::string lp = find_file(dir, split + "-labels-idx1-ubyte");
  d.images = read_idx_images(ip);
  d.labels = read_idx_labels(lp);
  if (d.images.count != d.labels.count) {
    throw IoError("\"" + ip + "\" holds " + std::to_string(d.images.count) + " images but \"" + lp +
                  "\" holds " + std::to_string(d.labels.count) + " labels");
  }
  for (size_t i = 0; i < d.labels.labels.size(); ++i) {
    if (d.labels.labels[i] > 9) {
      throw IoError("\"" + lp + "\": label " + std::to_string(d.labels.labels[i]) + " at index " +
                    std::to_string(i) + " is not a class in 0..9");
    }
  }
  return d;
}

}  // namespace mtf::models
