#include "array_convert.h"

#include <cstring>
#include <memory>

namespace mtf::python {
namespace {

py::dtype numpy_dtype(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kFloat32:
      return py::dtype::of<float>();
    case DType::kInt32:
      return py::dtype::of<int32_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
    default:
      throw DTypeError(what + ": " + dtype_name(dtype) +
                       " tensors have no NumPy counterpart here; use float32, int32 or bool");
  }
}

std::string shape_of(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

}  // namespace

DType array_dtype(const py::handle& obj) {
  const py::array a = py::array::ensure(obj);
  if (!a) throw DTypeError("expected a NumPy array (or a list of numbers)");
  const char kind = a.dtype().kind();
  if (kind == 'f') return float32;
  if (kind == 'i' || kind == 'u') return int32;
  if (kind == 'b') return bool_;
  throw DTypeError("a NumPy array of dtype " + py::str(a.dtype()).cast<std::string>() +
                   " cannot become a tensor: use a float, integer or bool array");
}

HostTensor array_to_host(const py::handle& obj, const Shape& shape, DType dtype,
                         const std::string& what) {
  // NumPy has no bfloat16: such a feed arrives as floats and is rounded here.
  if (dtype == bfloat16) return array_to_host(obj, shape, float32, what).as_dtype(bfloat16);
  py::array a = py::array::ensure(obj);
  if (!a) {
    throw ValueError(what + ": expected a NumPy array (or nested lists of numbers), got " +
                     py::repr(obj).cast<std::string>());
  }
  // A Python scalar is an array of no dimensions.
  const std::vector<int64_t> sizes = shape.sizes();
  bool same = a.ndim() == static_cast<py::ssize_t>(sizes.size());
  for (size_t i = 0; same && i < sizes.size(); ++i) same = a.shape(i) == sizes[i];
  if (!same) {
    throw ValueError(what + " is " + shape.to_string() + ", so it needs an array of shape " + [&] {
      std::string s = "(";
      for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
      return s + (sizes.size() == 1 ? ",)" : ")");
    }() + ", not " + shape_of(a));
  }
  const py::dtype want = numpy_dtype(dtype, what);
  HostTensor t(shape, dtype);
  if (a.dtype().is(want) || a.dtype().equal(want)) {
    if (a.flags() & py::array::c_style) {
      std::memcpy(t.raw_data(), a.data(), t.num_bytes());
      return t;
    }
  }
  const char kind = a.dtype().kind();
  // Into bool, integers convert as "nonzero".
  const bool castable = dtype == float32
                            ? (kind == 'f' || kind == 'i' || kind == 'u' || kind == 'b')
                            : (kind == 'i' || kind == 'u' || kind == 'b');
  if (!castable) {
    throw DTypeError(what + " is " + dtype_name(dtype) + ", and an array of dtype " +
                     py::str(a.dtype()).cast<std::string>() +
                     " does not convert to it without losing values: convert it first "
                     "(e.g. .astype(numpy.int32))");
  }
  // numpy copies (casting and following strides) straight into the tensor.
  py::capsule borrowed(t.raw_data(), [](void*) {});  // the view owns nothing
  py::array view(want, std::vector<py::ssize_t>(sizes.begin(), sizes.end()), {}, t.raw_data(),
                 borrowed);
  py::module_::import("numpy").attr("copyto")(view, a, py::arg("casting") = "unsafe");
  return t;
}

Feeds feeds_of(const py::object& feed_dict, const Session* session) {
  Feeds feeds;
  if (feed_dict.is_none()) return feeds;
  for (auto [key, value] : feed_dict.cast<py::dict>()) {
    if (!py::isinstance<PyTensor>(key)) {
      throw ValueError("feed_dict keys must be placeholders (mtf.Tensor), not " +
                       py::repr(key).cast<std::string>());
    }
    const Tensor t = key.cast<const PyTensor&>().tensor;
    Shape shape = t.shape();
    if (session && py::isinstance<py::array>(value)) {
      const py::array a = value.cast<py::array>();
      const Session::FeedBlock block = session->local_feed_block(t);
      std::vector<int64_t> sizes(a.shape(), a.shape() + a.ndim());
      if (!block.whole && sizes == block.shape.sizes()) shape = block.shape;
    }
    feeds.emplace_back(t, array_to_host(value, shape, t.dtype(), "the feed of " + t.describe()));
  }
  return feeds;
}

py::array host_to_array(HostTensor t) {
  if (t.dtype() == bfloat16) t = t.as_dtype(float32);  // exact; NumPy has no bfloat16
  const py::dtype dt = numpy_dtype(t.dtype(), "a fetch");
  const std::vector<int64_t> sizes = t.shape().sizes();
  std::vector<py::ssize_t> shape(sizes.begin(), sizes.end());
  if (!t.sole_owner()) t = t.clone();
  // The array keeps the tensor (and so its buffer) alive.
  auto* keep = new HostTensor(std::move(t));
  py::capsule owner(keep, [](void* p) { delete static_cast<HostTensor*>(p); });
  return py::array(dt, shape, {}, keep->raw_data(), owner);
}

}  // namespace mtf::python
