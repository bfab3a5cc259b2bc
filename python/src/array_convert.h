// array_convert.h — NumPy arrays in and out of HostTensors, one copy each
// way at most.
//
// In: the array is copied once into a new HostTensor of the given shape and
// dtype (numpy casts while it copies when the dtypes differ within a kind,
// e.g. float64 -> float32 or int64 -> int32; other kinds are a DTypeError).
// Its dimensions' sizes must be the shape's, in order (ValueError naming
// `what` and both otherwise). Out: the array shares the HostTensor's buffer
// when nothing else holds it (a fresh fetch), and is a copy otherwise, so an
// array never aliases a variable's value.
#pragma once

#include <pybind11/numpy.h>

#include <string>

#include "handles.h"

namespace mtf::python {

HostTensor array_to_host(const py::handle& array, const Shape& shape, DType dtype,
                         const std::string& what);
py::array host_to_array(HostTensor t);
// A feed_dict ({placeholder: array}, or None) as feeds, each array copied
// once (ValueError when a key is not a tensor).
// With `session`, an array of the shape of a placeholder's
// Session::local_feed_block (not the whole shape) is fed as that block.
Feeds feeds_of(const py::object& feed_dict, const Session* session = nullptr);
// float32 for NumPy floats, int32 for integers and booleans (DTypeError
// naming the array's dtype otherwise).
DType array_dtype(const py::handle& array);

}  // namespace mtf::python
