// interruptible.h — a long C++ call from Python: the GIL is released (other
// Python threads run meanwhile) and Ctrl-C reaches mtf.
//
// While an InterruptibleCall lives, SIGINT (on the main thread's process)
// calls mtf::request_interrupt() instead of Python's handler, so a run stops
// at its next step and throws InterruptedError, which the module turns into
// KeyboardInterrupt. finish() (call it once the C++ call has returned):
// a Ctrl-C that came too late to stop the call becomes Python's pending
// KeyboardInterrupt, raised after the call, whose result stands.
#pragma once

#include <csignal>

#include "handles.h"

namespace mtf::python {

class InterruptibleCall {
 public:
  InterruptibleCall();
  ~InterruptibleCall();
  InterruptibleCall(const InterruptibleCall&) = delete;
  InterruptibleCall& operator=(const InterruptibleCall&) = delete;
  // Restores Python's handler and the GIL; a late Ctrl-C is left pending
  // for Python (PyErr_SetInterrupt).
  void finish();

 private:
  void restore();
  struct sigaction previous_ {};
  bool installed_ = false;
  PyThreadState* saved_ = nullptr;
};

// Runs f() as an InterruptibleCall and returns its result.
template <typename F>
auto interruptible(F&& f) {
  InterruptibleCall call;
  auto result = f();
  call.finish();
  return result;
}

}  // namespace mtf::python
