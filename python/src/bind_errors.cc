// bind_errors.cc — mtf's exceptions as Python exceptions that keep their
// messages. Each also subclasses the built-in exception a Python user would
// catch for it (ShapeError is a ValueError, IoError an OSError, ...), and
// InterruptedError (a Ctrl-C during a run) becomes KeyboardInterrupt.
#include <Python.h>

#include "handles.h"

namespace mtf::python {
namespace {

PyObject* g_error = nullptr;
PyObject* g_shape = nullptr;
PyObject* g_dtype = nullptr;
PyObject* g_layout = nullptr;
PyObject* g_value = nullptr;
PyObject* g_io = nullptr;
PyObject* g_timeout = nullptr;
PyObject* g_peer_lost = nullptr;
PyObject* g_oom = nullptr;
PyObject* g_numerics = nullptr;
PyObject* g_internal = nullptr;

// A new exception class mtf.<name> with the given bases, added to m.
PyObject* make_error(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("mtf.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));  // the module keeps a reference
  return type;
}

}  // namespace

void bind_errors(py::module_& m) {
  py::handle base(PyExc_Exception);
  g_error = make_error(m, "Error", py::make_tuple(base), "Base of every mtf error.");
  py::handle error(g_error);
  auto with = [&](PyObject* builtin) { return py::make_tuple(error, py::handle(builtin)); };
  g_shape = make_error(m, "ShapeError", with(PyExc_ValueError),
                       "A malformed shape, or dimensions that do not fit together.");
  g_dtype =
      make_error(m, "DTypeError", with(PyExc_TypeError), "A tensor or array of the wrong dtype.");
  g_layout = make_error(m, "LayoutError", with(PyExc_ValueError),
                        "Layout rules that cannot work on the mesh.");
  g_value = make_error(m, "ValueError", with(PyExc_ValueError), "A bad argument value.");
  g_io = make_error(m, "IoError", with(PyExc_OSError),
                    "A file that is missing, truncated or not what it claims to be.");
  g_timeout = make_error(m, "TimeoutError", with(PyExc_TimeoutError),
                         "A blocking call passed its deadline.");
  g_peer_lost = make_error(m, "PeerLostError", with(PyExc_ConnectionError),
                           "A process of a multi-process job is gone.");
  g_numerics = make_error(m, "NumericsError", with(PyExc_FloatingPointError),
                          "A NaN or infinity where check_numerics forbids one.");
  g_oom = make_error(m, "OutOfMemoryError", with(PyExc_MemoryError),
                     "Memory for a tensor could not be had (or a simulated core's ran out).");
  g_internal = make_error(m, "InternalError", with(PyExc_RuntimeError),
                          "A bug in mtf: please report it with the message.");

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const InterruptedError&) {
      clear_interrupt();
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const ShapeError& e) {
      PyErr_SetString(g_shape, e.what());
    } catch (const DTypeError& e) {
      PyErr_SetString(g_dtype, e.what());
    } catch (const LayoutError& e) {
      PyErr_SetString(g_layout, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(g_value, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(g_io, e.what());
    } catch (const TimeoutError& e) {
      PyErr_SetString(g_timeout, e.what());
    } catch (const PeerLostError& e) {
      PyErr_SetString(g_peer_lost, e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(g_oom, e.what());
    } catch (const NumericsError& e) {
      PyErr_SetString(g_numerics, e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(g_internal, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace mtf::python
