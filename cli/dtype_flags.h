// dtype_flags.h — --activation_dtype and --slice_dtype, the run-wide
// VariableDType of the examples and benchmarks (master float32): bfloat16
// activations compute with weights stored as --slice_dtype.
#pragma once

#include "cli/flags.h"
#include "mtf/variables.h"

namespace mtf::cli {

// Declares --activation_dtype and --slice_dtype (both float32 by default).
void define_dtype_flags(Flags& flags);

// VariableDType(float32, --slice_dtype, --activation_dtype); a ValueError
// naming the flag for an unknown name, a DTypeError for a combination
// VariableDType refuses.
VariableDType variable_dtype_from_flags(const Flags& flags);

}  // namespace mtf::cli
