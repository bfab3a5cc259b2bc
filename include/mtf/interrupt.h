// mtf/interrupt.h — stopping a long call from outside it (a Ctrl-C handler,
// another thread, a Python binding).
//
// request_interrupt() asks every run in this process to stop: each processor
// checks at its next program step (real, placement and simulated runs, and
// the cost model that auto_layout evaluates layouts with) and throws
// InterruptedError. A run that stops this way commits none of its
// assignments and does not advance the run counter, so the Session keeps the
// variable values it had before the run and can run again. The request
// stays until clear_interrupt(), so every processor of the run sees it.
#pragma once

#include "mtf/errors.h"

namespace mtf {

// Async-signal-safe: may be called from a signal handler.
void request_interrupt() noexcept;
// Forgets a request (call it before the next run).
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;
// Throws InterruptedError when a request is pending; `where` says what stops.
void check_interrupt(const char* where);

}  // namespace mtf
