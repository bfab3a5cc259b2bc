#include "cli/dtype_flags.h"

#include "mtf/errors.h"

namespace mtf::cli {
namespace {

DType float_dtype_flag(const Flags& flags, const char* name) {
  const std::string value = flags.str(name);
  DType d;
  if (!dtype_from_name(value, &d) || d == int32) {
    throw ValueError(std::string("--") + name + " \"" + value + "\": use float32 or bfloat16");
  }
  return d;
}

}  // namespace

void define_dtype_flags(Flags& flags) {
  flags.define("activation_dtype", "float32",
               "float32 or bfloat16: the dtype activations and gradients are computed and "
               "stored in (weights are read in it)");
  flags.define("slice_dtype", "float32",
               "float32 or bfloat16: the dtype weights are stored, updated and checkpointed in");
}

VariableDType variable_dtype_from_flags(const Flags& flags) {
  VariableDType d(float32, float_dtype_flag(flags, "slice_dtype"),
                  float_dtype_flag(flags, "activation_dtype"));
  d.validate("--slice_dtype / --activation_dtype");
  return d;
}

}  // namespace mtf::cli
