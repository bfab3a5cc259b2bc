#include "core/buffer_pool.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "mtf/errors.h"

namespace mtf::detail {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

class Pool {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (!p) {
      throw OutOfMemoryError("cannot allocate " + std::to_string(bytes) +
                             " bytes of host memory for a tensor; use smaller shapes or split "
                             "the tensor over a mesh");
    }
    return p;
  }

  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + bytes <= kMaxCachedBytes) {
        free_[bytes].push_back(p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

  ~Pool() {
    for (auto& [bytes, list] : free_)
      for (void* p : list) std::free(p);
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

// Never destroyed: buffers may be released during static destruction.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

}  // namespace

std::shared_ptr<Buffer> allocate_buffer(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  auto* b = new Buffer{pool().take(rounded), rounded};
  return std::shared_ptr<Buffer>(b, [](Buffer* buf) {
    pool().give(buf->data, buf->bytes);
    delete buf;
  });
}

}  // namespace mtf::detail
