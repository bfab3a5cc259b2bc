// mtf/reduce_op.h — how values are combined by reductions and collectives.
#pragma once

namespace mtf {

enum class ReduceOp { kSum, kMax, kMin };

}  // namespace mtf
