#include "mtf/interrupt.h"

#include <atomic>
#include <string>

namespace mtf {
namespace {
// Lock-free, so setting it from a signal handler is safe.
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free);
}  // namespace

void request_interrupt() noexcept { g_interrupt.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { g_interrupt.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return g_interrupt.load(std::memory_order_relaxed); }

void check_interrupt(const char* where) {
  if (interrupt_requested()) {
    throw InterruptedError(std::string(where) +
                           ": interrupted (request_interrupt, e.g. Ctrl-C); nothing was changed");
  }
}

}  // namespace mtf
