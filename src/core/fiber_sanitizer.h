// fiber_sanitizer.h — AddressSanitizer and exceptions on fiber stacks.
// Internal.
//
// An exception unwinds frames without running their epilogues, so the
// redzones ASan poisoned for their locals stay poisoned. On a thread's stack
// ASan clears them when the exception is thrown; on a fiber's stack (Boost
// Fiber, whose context switches Debian's build does not announce to ASan) it
// cannot, and the next frame that lands on that memory — the catch block's
// calls, or a rethrow — is reported as a stack-use-after-scope that is not
// there. Call forget_unwound_frames() first thing in a catch block that runs
// on a fiber stack: it clears the poison of the stack below the caller's
// frame, where the unwound frames were (free stack either way). A no-op in
// builds without ASan.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace mtf::detail {

// Deeper than any throw path's frames (kernels, transports, the unwinder),
// and less than the smallest fiber stack (256 KiB) minus the frames above a
// catch site.
constexpr size_t kUnwoundStackBytes = 64 * 1024;

// Always inlined, so "the caller's frame" is the catch block's.
__attribute__((always_inline)) inline void forget_unwound_frames() {
#if defined(__SANITIZE_ADDRESS__)
  char* frame = static_cast<char*>(__builtin_frame_address(0));
  ASAN_UNPOISON_MEMORY_REGION(frame - kUnwoundStackBytes, kUnwoundStackBytes);
#endif
}

}  // namespace mtf::detail
