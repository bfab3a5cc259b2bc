// mtf/errors.h — the exception types mtf throws for user errors and for what
// the world did to us. Every message says what was wrong, where (tensor / op /
// dimension / file) and what to do. Internal invariant violations use
// MTF_CHECK (src/core/check.h) and throw InternalError.
#pragma once

#include <stdexcept>
#include <string>

namespace mtf {

// Base of every mtf exception.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A malformed shape or shape string, a duplicate or unknown dimension name, one
// name with two sizes, a reshape that changes the element count, an einsum
// output naming a dimension no input has.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A tensor of the wrong dtype for an op, or a dtype the CPU kernels lack.
class DTypeError : public Error {
 public:
  using Error::Error;
};

// A layout that cannot work: a tensor dimension not divisible by its mesh
// dimension, two dimensions of one tensor on one mesh dimension, one tensor
// dimension on two mesh dimensions, a rule naming an unknown mesh dimension.
class LayoutError : public Error {
 public:
  using Error::Error;
};

// A bad argument value: k larger than a dimension, keep_prob outside (0,1],
// slice out of range, a feed of the wrong shape, tensors of two graphs mixed.
class ValueError : public Error {
 public:
  using Error::Error;
};

// A file that is missing, truncated or not what it claims to be.
class IoError : public Error {
 public:
  using Error::Error;
};

// A blocking call passed its deadline (a peer too slow, or waiting for a
// message that never comes).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer of a multi-processor run is gone (died, killed, disconnected), or
// failed a step every rank took part in (a checkpoint save): the failure is
// that peer's, and its own error says what it was.
class PeerLostError : public Error {
 public:
  using Error::Error;
};

// A NaN or an infinity where MeshConfig::check_numerics forbids one; the
// message names the op, the call that made it, and where the value is.
class NumericsError : public Error {
 public:
  using Error::Error;
};

// Memory for a tensor could not be allocated.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// The call stopped because request_interrupt() (mtf/interrupt.h) asked it
// to: Ctrl-C in the Python module. Nothing the call would have changed has
// changed.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

// An invariant of mtf itself was broken: a bug in mtf, please report it.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace mtf
