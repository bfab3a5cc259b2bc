// Every op that takes one of its input's dimensions takes it by name or as
// a Dimension, with the same result; a wrong name or size is a ShapeError
// naming the op; a reduction's string is an output shape when it has a ':'
// (or is empty) and a dimension's name otherwise.
#include <functional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "mtf/layers.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::eval;
using testing::random_tensor;

class DimRefTest : public ::testing::Test {
 protected:
  Graph g;
  Mesh mesh{g, "m"};
  Tensor x = import_host(mesh, random_tensor(Shape("a:2;v:6;b:3"), 1, 0.1f, 1.f));
  Dimension v = x.shape().get("v");
  // Every op taking an existing dimension, called with `d`; each result
  // flattened to the values of its tensors, in order.
  std::vector<Tensor> all_ops(const DimRef& d) {
    const Tensor ids = import_host(mesh, HostTensor::from_ints(Shape("a:2;l:2"), {0, 5, 3, 7}));
    const Tensor targets =
        import_host(mesh, HostTensor::from_ints(Shape("a:2;b:3"), {0, 1, 2, 3, 4, 5}));
    std::vector<Tensor> r = {reduce_sum(x, d),
                             reduce_mean(x, d),
                             reduce_max(x, d),
                             reduce_min(x, d),
                             reduce_logsumexp(x, d),
                             softmax(x, d),
                             log_softmax(x, d),
                             top_k(x, d, Dimension{"k", 2}).first,
                             cast(top_k(x, d, Dimension{"k", 2}).second, float32),
                             nth_largest_element(x, 1, d),
                             nth_smallest_element(x, 1, d),
                             shift(x, 2, d, false),
                             cumsum(x, d),
                             cumprod(x, d, true, true),
                             gather(x, ids, d),
                             softmax_cross_entropy_with_logits(x, softmax(x, d), d),
                             layers::layer_norm(x, d, "ln"),
                             layers::softmax_cross_entropy_mean(x, targets, d),
                             slice(x, 1, 3, d),
                             pad(x, 1, 2, d),
                             concat({x, x}, d),
                             rename_dimension(x, d, "w")};
    for (const Tensor& t : split(x, d, 3)) r.push_back(t);
    for (const Tensor& t : split(x, d, {1, 5})) r.push_back(t);
    for (const Tensor& t : unstack(x, d)) r.push_back(t);
    return r;
  }
};

TEST_F(DimRefTest, ByNameAndByDimensionGiveTheSameValues) {
  const std::vector<Tensor> by_dim = all_ops(v), by_name = all_ops("v"),
                            by_string = all_ops(std::string("v"));
  ASSERT_EQ(by_dim.size(), by_name.size());
  std::vector<Tensor> fetches;
  for (const auto* set : {&by_dim, &by_name, &by_string})
    fetches.insert(fetches.end(), set->begin(), set->end());
  Session s(g);
  const std::vector<HostTensor> got = s.run(fetches, {});
  const size_t n = by_dim.size();
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("op " + std::to_string(i) + ": " + by_dim[i].describe());
    EXPECT_EQ(by_name[i].shape(), by_dim[i].shape());
    EXPECT_EQ(got[n + i].to_floats(), got[i].to_floats());
    EXPECT_EQ(got[2 * n + i].to_floats(), got[i].to_floats());
  }
}

TEST_F(DimRefTest, WrongNamesAndSizesAreShapeErrorsNamingTheOp) {
  for (const DimRef& bad : {DimRef("w"), DimRef(Dimension{"v", 5})}) {
    const std::string needle = bad.name() == "w" ? "\"w\"" : "disagrees in size";
    testing::expect_error<ShapeError>([&] { reduce_sum(x, bad); }, {"reduce_sum", needle});
    testing::expect_error<ShapeError>([&] { softmax(x, bad); }, {"softmax", needle});
    testing::expect_error<ShapeError>([&] { top_k(x, bad, Dimension{"k", 2}); }, {"top_k", needle});
    testing::expect_error<ShapeError>([&] { split(x, bad, 2); }, {"split", needle});
    testing::expect_error<ShapeError>([&] { unstack(x, bad); }, {"unstack", needle});
    testing::expect_error<ShapeError>([&] { shift(x, 1, bad, true); }, {"shift", needle});
    testing::expect_error<ShapeError>([&] { cumsum(x, bad); }, {"cumsum", needle});
    testing::expect_error<ShapeError>([&] { gather(x, zeros(mesh, Shape("l:2"), int32), bad); },
                                      {"gather", needle});
    testing::expect_error<ShapeError>([&] { layers::layer_norm(x, bad, "ln2"); },
                                      {"layer_norm", needle});
    testing::expect_error<ShapeError>([&] { slice(x, 0, 1, bad); }, {"slice", needle});
    testing::expect_error<ShapeError>([&] { pad(x, 0, 1, bad); }, {"pad", needle});
    testing::expect_error<ShapeError>([&] { rename_dimension(x, bad, "u"); },
                                      {"rename_dimension", needle});
  }
}

TEST_F(DimRefTest, ReductionStringsAreShapesWithAColonAndNamesWithout) {
  EXPECT_EQ(reduce_sum(x, "v").shape(), Shape("a:2;b:3"));
  EXPECT_EQ(reduce_sum(x, "b:3;a:2").shape(), Shape("b:3;a:2"));
  EXPECT_EQ(reduce_sum(x, "").shape(), Shape());
  EXPECT_EQ(reduce_sum(x, {x.shape().get("b")}).shape(), Shape("b:3"));
  EXPECT_EQ(reduce_sum(x, x.shape().get("b")).shape(), Shape("a:2;v:6"));
  EXPECT_EQ(eval(reduce_sum(x, "v")), eval(reduce_sum(x, Shape("a:2;b:3"))));
  testing::expect_error<ShapeError>([&] { reduce_sum(x, "v:6;q"); }, {"malformed shape string"});
}

}  // namespace
}  // namespace mtf
