#include "ops/op_util.h"

#include <map>

namespace mtf::ops {

void check_consistent_sizes(const std::string& op, const std::vector<Tensor>& inputs) {
  std::map<std::string, std::pair<int64_t, const Tensor*>> seen;
  for (const Tensor& t : inputs) {
    for (const Dimension& d : t.shape()) {
      auto it = seen.find(d.name);
      if (it == seen.end()) {
        seen[d.name] = {d.size, &t};
      } else if (it->second.first != d.size) {
        throw ShapeError(detail::str_cat(
            op, ": dimension \"", d.name, "\" has size ", it->second.first, " in input ",
            it->second.second->describe(), " but size ", d.size, " in input ", t.describe(),
            "; one dimension name must mean one size (rename one of them)"));
      }
    }
  }
}

void check_same_dtype(const std::string& op, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) {
    if (t.dtype() != inputs[0].dtype()) {
      throw DTypeError(detail::str_cat(op, ": input ", t.describe(), " has dtype ",
                                       dtype_name(t.dtype()), " but input ", inputs[0].describe(),
                                       " has dtype ", dtype_name(inputs[0].dtype()),
                                       "; cast one of them"));
    }
  }
}

void reject_bool(const std::string& op, const Tensor& x) {
  if (x.dtype() == bool_) {
    throw DTypeError(detail::str_cat(
        op, ": input ", x.describe(),
        " is bool, which takes no arithmetic; cast it first (cast(x, int32) or cast(x, float32)), "
        "or use logical_not / logical_and / logical_or / reduce_all / reduce_any / where"));
  }
}

void require_float(const std::string& op, const Tensor& x) {
  if (x.dtype() != float32 && x.dtype() != bfloat16) {
    throw DTypeError(detail::str_cat(op, ": input ", x.describe(),
                                     " must be float32 or bfloat16, not ", dtype_name(x.dtype())));
  }
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  if (b.is_subset_of(a)) return a;
  if (a.is_subset_of(b)) return b;
  return a.union_with(b);
}

Tensor scalar_like(const Tensor& x, float value) {
  return constant(x.mesh(), value, Shape(), x.dtype());
}

Tensor reduce_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  if (t.shape().same_dims_as(shape)) return transpose(t, shape);
  return reduce_sum(t, shape);
}

OriginScope made_by(const std::string& call, const Tensor& x) {
  if (!x.valid()) throw ValueError(call + ": invalid input tensor");
  return OriginScope(x.graph(), call + " on \"" + x.name() + "\"");
}

Dimension dim_of(const std::string& op, const Tensor& x, const DimRef& d) {
  if (!x.valid()) throw ValueError(op + ": invalid input tensor");
  return d.in(x.shape(), op, x.describe());
}

int axis_of(const std::string& op, const Tensor& x, const std::string& name) {
  int a = x.shape().index_of(name);
  if (a < 0) {
    throw ShapeError(detail::str_cat(op, ": unknown dimension \"", name, "\": input ", x.describe(),
                                     " has no dimension of that name"));
  }
  return a;
}

}  // namespace mtf::ops
