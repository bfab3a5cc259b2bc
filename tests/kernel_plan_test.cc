// Kernel plans: one einsum plan per set of shapes serves every run with
// right numbers on every path (in place, permuted, dot, chains, int32, fixed
// order), and the lowering plans every einsum step of a program.
#include <cstring>
#include <random>

#include "kernels/kernels.h"
#include "lowering/kernel_plans.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::expect_near_vectors;
using testing::ref_einsum;

HostTensor filled(const Shape& shape, DType dtype, std::mt19937& rng) {
  HostTensor t(shape, dtype);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (dtype == float32) {
      t.data<float>()[i] = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(rng() % 7) - 3;
    }
  }
  return t;
}

TEST(KernelPlanTest, OnePlanServesEveryRun) {
  const struct {
    std::vector<const char*> inputs;
    const char* out;
  } cases[] = {
      {{"b:3;i:5;k:7", "k:7;j:4"}, "b:3;i:5;j:4"},                  // plain GEMM
      {{"k:7;i:5", "j:4;k:7"}, "i:5;j:4"},                          // both transposed
      {{"b:2;l:6;h:3;d:4", "b:2;m:5;h:3;d:4"}, "b:2;h:3;l:6;m:5"},  // attention logits
      {{"b:2;h:3;l:6;m:5", "b:2;m:5;h:3;d:4"}, "b:2;l:6;h:3;d:4"},  // attention values
      {{"i:5;k:7", "k:7;j:4"}, "j:4;i:5"},                          // output swapped
      {{"i:5;k:7;x:3", "k:7;j:4"}, "j:4;i:5"},                      // x summed out first
      {{"b:6;k:9", "b:6;k:9"}, "b:6"},                              // dot
      {{"i:5;j:4", "j:4"}, "i:5;j:4"},                              // product, no K
      {{"a:3;b:4", "b:4;c:5", "c:5;d:2"}, "a:3;d:2"},               // a chain
      {{"i:5;k:7;j:4"}, "i:5"},                                     // one operand: a sum
  };
  std::mt19937 rng(11);
  for (DType dtype : {float32, int32}) {
    for (bool fixed_order : {false, true}) {
      for (const auto& c : cases) {
        SCOPED_TRACE(std::string(c.out) + (fixed_order ? " fixed" : "") + dtype_name(dtype));
        std::vector<HostTensor> ins;
        std::vector<Shape> shapes;
        std::vector<const HostTensor*> ptrs;
        for (const char* s : c.inputs) {
          ins.push_back(filled(Shape(s), dtype, rng));
          shapes.push_back(Shape(s));
        }
        for (const HostTensor& t : ins) ptrs.push_back(&t);
        const auto plan = kernels::plan_einsum(shapes, Shape(c.out), dtype, fixed_order);
        HostTensor got(Shape(c.out), dtype);
        for (int run = 0; run < 2; ++run) {  // new values, the same plan
          for (HostTensor& t : ins) t = filled(t.shape(), dtype, rng);
          ptrs.clear();
          for (const HostTensor& t : ins) ptrs.push_back(&t);
          kernels::einsum(*plan, ptrs, got);
          expect_near_vectors(got.to_floats(), ref_einsum(ins, Shape(c.out)), 1e-5f);
        }
      }
    }
  }
}

TEST(KernelPlanTest, APlanRefusesOtherShapes) {
  const auto plan =
      kernels::plan_einsum({Shape("i:2;k:3"), Shape("k:3;j:4")}, Shape("i:2;j:4"), float32, false);
  HostTensor a(Shape("i:2;k:3"), float32), b(Shape("k:3;j:5"), float32),
      out(Shape("i:2;j:4"), float32);
  EXPECT_THROW(kernels::einsum(*plan, {&a, &b}, out), Error);
}

TEST(KernelPlanTest, LoweringPlansEveryEinsumStep) {
  Graph g;
  Mesh mesh(g, "m");
  Tensor x = placeholder(mesh, Shape("b:8;i:6"), float32, "x");
  Tensor w = get_variable(mesh, "w", Shape("i:6;o:4"));
  Tensor loss = reduce_sum(square(einsum({x, w}, Shape("b:8;o:4"))));
  std::vector<Tensor> grads = gradients({loss}, {w});
  Program p = lower(g, {loss, grads[0]}, {}, MeshShape("r:2"), LayoutRules("b:r"));
  int einsums = 0;
  for (const Step& s : p.steps)
    einsums += s.kind == Step::Kind::kCompute && s.op->type() == "einsum";
  EXPECT_GE(einsums, 2);
  EXPECT_EQ(plan_kernels(p, false), einsums);
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::kCompute) {
      EXPECT_EQ(s.kernel_plan != nullptr, s.op->type() == "einsum");
    }
  }
}

}  // namespace
}  // namespace mtf
