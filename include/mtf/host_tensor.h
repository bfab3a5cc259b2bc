// mtf/host_tensor.h — a dense, row-major tensor in host memory.
//
// HostTensor is how data enters and leaves a graph (feeds, fetches, variable
// values) and is also the slice type the CPU kernels work on. Copies are
// shallow: two HostTensors may share one buffer, like TensorFlow tensors;
// use clone() for a deep copy. Buffers are 64-byte aligned and recycled
// through a process-wide pool so that steady-state training allocates no
// fresh pages. Thread safety: distinct HostTensors may be used from distinct
// threads; one buffer must not be written while another thread reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mtf/bfloat16.h"
#include "mtf/dtype.h"
#include "mtf/shape.h"

namespace mtf {

namespace detail {
struct Buffer;
}

class HostTensor {
 public:
  HostTensor() = default;
  // Uninitialized contents.
  HostTensor(Shape shape, DType dtype);

  static HostTensor zeros(Shape shape, DType dtype);
  // Throws ValueError when values.size() != shape.num_elements().
  static HostTensor from_floats(Shape shape, const std::vector<float>& values);
  // The values rounded to `dtype` (float32 or bfloat16: round to nearest even).
  static HostTensor from_floats(Shape shape, const std::vector<float>& values, DType dtype);
  static HostTensor from_ints(Shape shape, const std::vector<int32_t>& values);
  // A bool tensor (one byte each, 0 or 1).
  static HostTensor from_bools(Shape shape, const std::vector<bool>& values);
  static HostTensor scalar(float value);

  bool valid() const { return buffer_ != nullptr; }
  // True when no other HostTensor shares this one's buffer (so a kernel may
  // overwrite it once its last reader is done).
  bool sole_owner() const { return buffer_ != nullptr && buffer_.use_count() == 1; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t num_bytes() const;

  // Typed access; throws DTypeError when T does not match dtype().
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;
  void* raw_data();
  const void* raw_data() const;

  // Typed access: float (float32), int32_t, BFloat16, and uint8_t for bool
  // (whose bytes are 0 or 1; a kernel writing one must keep it so).
  // Values as floats (int32, bfloat16 and bool converted), in row-major order.
  std::vector<float> to_floats() const;
  std::vector<int32_t> to_ints() const;
  // A deep copy in a fresh buffer.
  HostTensor clone() const;
  // The values in `dtype`, a fresh buffer (this one when the dtype is the
  // same): float32 <-> bfloat16 rounds to nearest even; float -> int32
  // truncates toward zero, as static_cast does; anything -> bool is
  // "nonzero" (NaN included), bool -> anything 0 or 1.
  HostTensor as_dtype(DType dtype) const;
  // The same buffer seen with another shape of equal element count.
  HostTensor reshaped(Shape shape) const;

 private:
  void check_dtype(DType expected) const;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::shared_ptr<detail::Buffer> buffer_;
};

template <>
float* HostTensor::data<float>();
template <>
const float* HostTensor::data<float>() const;
template <>
int32_t* HostTensor::data<int32_t>();
template <>
const int32_t* HostTensor::data<int32_t>() const;
template <>
uint8_t* HostTensor::data<uint8_t>();
template <>
const uint8_t* HostTensor::data<uint8_t>() const;

}  // namespace mtf
