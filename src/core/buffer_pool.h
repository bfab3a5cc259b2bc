// buffer_pool.h — 64-byte-aligned host buffers recycled by exact size.
//
// Steady-state training allocates the same sizes every step; handing back
// buffers that were already touched avoids the page-fault cost of fresh
// memory (several microseconds per 4 KiB page on these machines). The pool
// keeps at most kMaxCachedBytes of idle buffers. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>

namespace mtf::detail {

struct Buffer {
  void* data = nullptr;
  size_t bytes = 0;
};

// A buffer of at least `bytes` bytes (contents unspecified), returned to the
// pool when the last shared_ptr to it goes.
std::shared_ptr<Buffer> allocate_buffer(size_t bytes);

}  // namespace mtf::detail
