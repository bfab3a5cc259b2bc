#include "interruptible.h"

#include <thread>

namespace mtf::python {
namespace {

void on_sigint(int) { request_interrupt(); }

bool on_main_thread() {
  return PyThread_get_thread_ident() ==
         PyLong_AsUnsignedLong(
             py::module_::import("threading").attr("main_thread")().attr("ident").ptr());
}

}  // namespace

InterruptibleCall::InterruptibleCall() {
  clear_interrupt();
  // Only the main thread receives Python's SIGINT; other threads' calls
  // leave the handler alone.
  if (on_main_thread()) {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
  }
  saved_ = PyEval_SaveThread();
}

void InterruptibleCall::restore() {
  if (saved_) {
    PyEval_RestoreThread(saved_);
    saved_ = nullptr;
  }
  if (installed_) {
    sigaction(SIGINT, &previous_, nullptr);
    installed_ = false;
  }
}

InterruptibleCall::~InterruptibleCall() { restore(); }

void InterruptibleCall::finish() {
  restore();
  // The call completed (a run committed its step): a Ctrl-C that came too
  // late to stop it goes to Python as an ordinary pending KeyboardInterrupt,
  // raised between the statements that follow — not as an exception from
  // this call, whose message would say that nothing was changed.
  if (interrupt_requested()) {
    clear_interrupt();
    PyErr_SetInterrupt();
  }
}

}  // namespace mtf::python
