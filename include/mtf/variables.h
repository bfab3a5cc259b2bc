// mtf/variables.h — variables and assignments.
//
// A variable is an op whose output is the variable's value at the start of a
// Session::run. Assignments write a new value that later runs see; within a
// run every read sees the old value, whatever the op order. Initial values are
// drawn counter-based from (seed, variable name, logical index), so they are
// the same under every layout and mesh.
#pragma once

#include <string>
#include <vector>

#include "mtf/graph.h"

namespace mtf {

struct Initializer {
  enum class Kind { kZeros, kOnes, kConstant, kNormal, kTruncatedNormal, kUniform, kGlorotUniform };
  Kind kind = Kind::kGlorotUniform;
  float a = 0.0f;  // constant value / mean / minval
  float b = 0.0f;  // stddev / maxval

  static Initializer zeros() { return {Kind::kZeros, 0, 0}; }
  static Initializer ones() { return {Kind::kOnes, 0, 0}; }
  static Initializer constant(float v) { return {Kind::kConstant, v, 0}; }
  static Initializer normal(float mean, float stddev) { return {Kind::kNormal, mean, stddev}; }
  // Normal, redrawn beyond two standard deviations.
  static Initializer truncated_normal(float stddev) { return {Kind::kTruncatedNormal, 0, stddev}; }
  static Initializer uniform(float lo, float hi) { return {Kind::kUniform, lo, hi}; }
  // Uniform in +-sqrt(6/(fan_in+fan_out)), fans as TensorFlow computes them
  // (last dimension = fan_out, the others = fan_in).
  static Initializer glorot_uniform() { return {Kind::kGlorotUniform, 0, 0}; }
};

// Mesh TensorFlow's VariableDType: how a variable is kept and read.
//   master      what checkpoints hold: float32 (int32 or bool for integer
//               or bool variables, which keep that dtype throughout)
//   slice       what each processor stores and the optimizer updates:
//               float32, or bfloat16 for half the memory (updates rounded)
//   activation  what get_variable returns, the dtype the model computes in
//               (a cast of the slice where the two differ)
// The paper's runs: VariableDType(float32, float32, bfloat16).
struct VariableDType {
  DType master = float32;
  DType slice = float32;
  DType activation = float32;

  VariableDType() = default;
  VariableDType(DType master_dtype, DType slice_dtype, DType activation_dtype)
      : master(master_dtype), slice(slice_dtype), activation(activation_dtype) {}
  // What a single dtype means: itself throughout, except that bfloat16
  // keeps a float32 master (bfloat16 slices and activations).
  static VariableDType of(DType dtype);
  // DTypeError, naming `where`, for a combination that is not allowed: a
  // master other than float32, int32 or bool, a float master with int32
  // slices or activations, an int32 master with float ones, bool mixed with
  // anything else.
  void validate(const std::string& where) const;
  std::string to_string() const;  // "master float32, slice bfloat16, activation bfloat16"
};

// Creates a variable; returns its value tensor (in the activation dtype).
// Names are the op names and must be unique in the graph (ValueError
// otherwise): checkpoints key on them.
Tensor get_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                    Initializer initializer, const VariableDType& dtype, bool trainable = true);
Tensor get_variable(const Mesh& mesh, const std::string& name, const Shape& shape,
                    Initializer initializer = Initializer::glorot_uniform(), DType dtype = float32,
                    bool trainable = true);
// True when t is the value of a variable op.
bool is_variable(const Tensor& t);

// Assignments; `var` must be a variable's value tensor (or what get_variable
// returned: a cast of it) and `value` must have its dimensions (any order,
// broadcast allowed) and a dtype of the same kind (a float value is cast
// to the variable's slice dtype). Return the
// assignment op, to pass to Session::run as a target.
Operation* assign(const Tensor& var, const Tensor& value);
Operation* assign_add(const Tensor& var, const Tensor& value);
Operation* assign_sub(const Tensor& var, const Tensor& value);
// var with positions [begin, begin + n) of dimension `dim` replaced by
// value, whose shape is var's with `dim` n long (n <= dim's size - begin);
// the other positions keep their values. ShapeError otherwise.
Operation* assign_slice(const Tensor& var, const Tensor& value, int64_t begin, const DimRef& dim);

}  // namespace mtf
