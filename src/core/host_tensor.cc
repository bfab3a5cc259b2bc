#include "mtf/host_tensor.h"

#include <cstring>

#include "core/bfloat16_convert.h"
#include "core/buffer_pool.h"
#include "core/check.h"

namespace mtf {

HostTensor::HostTensor(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  try {
    buffer_ = detail::allocate_buffer(shape_.num_elements() * dtype_size(dtype));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(
        detail::str_cat("HostTensor ", shape_.to_string(), " ", dtype_name(dtype), ": ", e.what()));
  }
}

HostTensor HostTensor::zeros(Shape shape, DType dtype) {
  HostTensor t(std::move(shape), dtype);
  std::memset(t.raw_data(), 0, t.num_bytes());
  return t;
}

namespace {

template <typename T>
HostTensor from_values(Shape shape, DType dtype, const std::vector<T>& values, const char* who) {
  if (static_cast<int64_t>(values.size()) != shape.num_elements()) {
    throw ValueError(detail::str_cat("HostTensor::", who, ": ", values.size(),
                                     " values given for shape ", shape.to_string(), " of ",
                                     shape.num_elements(), " elements"));
  }
  HostTensor t(std::move(shape), dtype);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

}  // namespace

HostTensor HostTensor::from_floats(Shape shape, const std::vector<float>& values) {
  return from_values(std::move(shape), float32, values, "from_floats");
}

HostTensor HostTensor::from_floats(Shape shape, const std::vector<float>& values, DType dtype) {
  if (dtype == float32) return from_floats(std::move(shape), values);
  if (dtype != bfloat16) {
    throw DTypeError("HostTensor::from_floats: values can be float32 or bfloat16, not " +
                     dtype_name(dtype));
  }
  return from_floats(std::move(shape), values).as_dtype(bfloat16);
}

HostTensor HostTensor::from_ints(Shape shape, const std::vector<int32_t>& values) {
  return from_values(std::move(shape), int32, values, "from_ints");
}

HostTensor HostTensor::from_bools(Shape shape, const std::vector<bool>& values) {
  const std::vector<uint8_t> bytes(values.begin(), values.end());
  return from_values(std::move(shape), bool_, bytes, "from_bools");
}

HostTensor HostTensor::scalar(float value) { return from_floats(Shape(), {value}); }

size_t HostTensor::num_bytes() const { return num_elements() * dtype_size(dtype_); }

void HostTensor::check_dtype(DType expected) const {
  if (!valid()) throw ValueError("access to the data of an empty HostTensor");
  if (dtype_ != expected) {
    throw DTypeError(detail::str_cat("HostTensor of shape ", shape_.to_string(), " holds ",
                                     dtype_name(dtype_), ", accessed as ", dtype_name(expected)));
  }
}

// data<T>(): the buffer as T, after checking that T is the dtype's type.
#define MTF_HOST_TENSOR_DATA(T, DTYPE)           \
  template <>                                    \
  T* HostTensor::data<T>() {                     \
    check_dtype(DTYPE);                          \
    return static_cast<T*>(buffer_->data);       \
  }                                              \
  template <>                                    \
  const T* HostTensor::data<T>() const {         \
    check_dtype(DTYPE);                          \
    return static_cast<const T*>(buffer_->data); \
  }
MTF_HOST_TENSOR_DATA(float, float32)
MTF_HOST_TENSOR_DATA(int32_t, int32)
MTF_HOST_TENSOR_DATA(uint8_t, bool_)
MTF_HOST_TENSOR_DATA(BFloat16, bfloat16)
#undef MTF_HOST_TENSOR_DATA

void* HostTensor::raw_data() {
  if (!valid()) throw ValueError("access to the data of an empty HostTensor");
  return buffer_->data;
}
const void* HostTensor::raw_data() const {
  if (!valid()) throw ValueError("access to the data of an empty HostTensor");
  return buffer_->data;
}

std::vector<float> HostTensor::to_floats() const {
  std::vector<float> v(num_elements());
  if (dtype_ == float32) {
    if (!v.empty()) std::memcpy(v.data(), raw_data(), num_bytes());
  } else if (dtype_ == int32) {
    const int32_t* p = data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(p[i]);
  } else if (dtype_ == bool_) {
    const uint8_t* p = data<uint8_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i] ? 1.0f : 0.0f;
  } else {
    bfloat16_to_floats(static_cast<const uint16_t*>(raw_data()), v.data(), num_elements());
  }
  return v;
}

HostTensor HostTensor::as_dtype(DType dtype) const {
  if (dtype == dtype_) return *this;
  HostTensor out(shape_, dtype);
  const int64_t n = num_elements();
  if (n == 0) return out;
  if (dtype == bool_) {
    uint8_t* q = out.data<uint8_t>();
    if (dtype_ == int32) {
      const int32_t* p = data<int32_t>();
      for (int64_t i = 0; i < n; ++i) q[i] = p[i] != 0;
    } else {
      const std::vector<float> f = dtype_ == float32 ? std::vector<float>() : to_floats();
      const float* p = dtype_ == float32 ? data<float>() : f.data();
      for (int64_t i = 0; i < n; ++i) q[i] = p[i] != 0.0f;  // NaN is true
    }
  } else if (dtype == bfloat16) {
    const std::vector<float> f = dtype_ == float32 ? std::vector<float>() : to_floats();
    const float* src = dtype_ == float32 ? data<float>() : f.data();
    floats_to_bfloat16(src, static_cast<uint16_t*>(out.raw_data()), n);
  } else if (dtype == float32) {
    const std::vector<float> f = to_floats();
    std::memcpy(out.raw_data(), f.data(), n * sizeof(float));
  } else {
    const std::vector<int32_t> v = to_ints();
    std::memcpy(out.raw_data(), v.data(), n * sizeof(int32_t));
  }
  return out;
}

std::vector<int32_t> HostTensor::to_ints() const {
  std::vector<int32_t> v(num_elements());
  if (dtype_ == int32) {
    if (!v.empty()) std::memcpy(v.data(), raw_data(), num_bytes());
  } else if (dtype_ == bool_) {
    const uint8_t* p = data<uint8_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i] ? 1 : 0;
  } else {
    const std::vector<float> f = to_floats();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(f[i]);
  }
  return v;
}

HostTensor HostTensor::clone() const {
  HostTensor t(shape_, dtype_);
  if (num_bytes()) std::memcpy(t.raw_data(), raw_data(), num_bytes());
  return t;
}

HostTensor HostTensor::reshaped(Shape shape) const {
  MTF_CHECK(shape.num_elements() == num_elements());
  HostTensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace mtf
