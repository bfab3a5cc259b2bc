// product_run.h — one matrix product [m,k] x [k,n] through mtf, its graph
// and Session made once and run as often as a measurement needs: what
// mtf-sim --calibrate's einsum points and --watch_speeds time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mtf/mtf.h"

namespace mtf::tools {

class ProductRun {
 public:
  // assigned: the product is written into a variable (two steps); else it
  // is fetched (one step and a copy of the result; bfloat16 products are
  // timed so, as an assign to a bfloat16 variable rounds element by
  // element and would be timed with them).
  ProductRun(int64_t m, int64_t k, int64_t n, DType dtype, bool assigned)
      : mesh_(graph_, "calibration"),
        flops_(2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n)) {
    const Dimension dm{"m", m}, dk{"k", k}, dn{"n", n};
    const Initializer init = Initializer::glorot_uniform();
    const Tensor a = get_variable(mesh_, "a", Shape({dm, dk}), init, dtype);
    const Tensor b = get_variable(mesh_, "b", Shape({dk, dn}), init, dtype);
    product_ = einsum({a, b}, Shape({dm, dn}));
    if (assigned) write_ = assign(get_variable(mesh_, "c", Shape({dm, dn}), init, dtype), product_);
    session_ = std::make_unique<Session>(graph_, MeshConfig{});
  }
  void run() {
    if (write_)
      session_->run(std::vector<Tensor>{}, {}, {write_});
    else
      session_->run(std::vector<Tensor>{product_});
  }
  double flops() const { return flops_; }

 private:
  Graph graph_;
  Mesh mesh_;
  Tensor product_;
  Operation* write_ = nullptr;
  std::unique_ptr<Session> session_;
  double flops_;
};

}  // namespace mtf::tools
