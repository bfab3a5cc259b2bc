// User-defined slice-wise ops (mtf/slicewise.h): a C++ function's values,
// the one-processor bits on split layouts and both mesh implementations
// (dimensions not declared splittable arrive whole), several outputs of
// other dtypes, bfloat16 seen as float32, the user's gradient against finite
// differences, the simulator's cost, and the errors misuse gets.
#include "mtf/slicewise.h"

#include <cmath>
#include <mutex>
#include <set>

#include "mtf/sim.h"
#include "mtf/variables.h"
#include "test_util.h"

namespace mtf {
namespace {

using testing::mesh_config;

const Shape kShape("b:4;h:6");

// x^3, elementwise, with its gradient 3 x^2 dy.
Tensor cube(const Tensor& x) {
  return cwise(
      [](const std::vector<HostTensor>& in) {
        HostTensor out(in[0].shape(), float32);
        const float* p = in[0].data<float>();
        for (int64_t i = 0; i < out.num_elements(); ++i) out.data<float>()[i] = p[i] * p[i] * p[i];
        return std::vector<HostTensor>{out};
      },
      {x},
      [](const SlicewiseCall& op, const std::vector<Tensor>& dys) {
        return std::vector<Tensor>{dys[0] * square(op.inputs[0]) * 3.f};
      },
      "cube");
}

// x divided by the largest |x| of its row along h: h must arrive whole.
// Records the slice shapes it was called with.
struct RowNormalize {
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::set<std::string>> seen = std::make_shared<std::set<std::string>>();
  Tensor operator()(const Tensor& x) const {
    SlicewiseOptions o;
    o.splittable_dims = {"b"};
    o.name = "row_normalize";
    auto mu_ = mu;
    auto seen_ = seen;
    return slicewise(
        [mu_, seen_](const std::vector<HostTensor>& in) {
          {
            std::lock_guard<std::mutex> lock(*mu_);
            seen_->insert(in[0].shape().to_string());
          }
          const Shape& s = in[0].shape();
          const int64_t rows = s[0].size, n = s[1].size;
          HostTensor out(s, float32);
          for (int64_t r = 0; r < rows; ++r) {
            float m = 0;
            for (int64_t j = 0; j < n; ++j)
              m = std::max(m, std::fabs(in[0].data<float>()[r * n + j]));
            for (int64_t j = 0; j < n; ++j)
              out.data<float>()[r * n + j] = in[0].data<float>()[r * n + j] / m;
          }
          return std::vector<HostTensor>{out};
        },
        {x}, o)[0];
  }
};

std::vector<float> run_on(const MeshConfig& mc, const HostTensor& x,
                          const std::function<Tensor(const Tensor&)>& f) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor in = placeholder(mesh, x.shape(), x.dtype(), "x");
  Session s(g, mc);
  return s.run(f(in), {{in, x}}).to_floats();
}

TEST(SlicewiseTest, ValuesAndEveryLayoutGiveOneProcessorsBits) {
  const HostTensor x = testing::random_tensor(kShape, 5, -2.f, 2.f);
  const std::vector<float> xv = x.to_floats();
  RowNormalize normalize;
  const std::vector<float> cubed = run_on(MeshConfig(), x, cube);
  const std::vector<float> normalized = run_on(MeshConfig(), x, normalize);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(cubed[i], xv[i] * xv[i] * xv[i]);
  for (int r = 0; r < 4; ++r) {
    float m = 0;
    for (int j = 0; j < 6; ++j) m = std::max(m, std::fabs(xv[r * 6 + j]));
    for (int j = 0; j < 6; ++j) EXPECT_EQ(normalized[r * 6 + j], xv[r * 6 + j] / m);
  }
  EXPECT_EQ(*normalize.seen, std::set<std::string>{Shape("b:4;h:6").to_string()});
  for (MeshImpl impl : {MeshImpl::kSimd, MeshImpl::kPlacement}) {
    for (const char* layout : {"b:rows;h:cols", "h:rows", "b:cols"}) {
      SCOPED_TRACE(layout);
      const MeshConfig mc = mesh_config("rows:2;cols:2", layout, impl);
      EXPECT_EQ(run_on(mc, x, cube), cubed);
      normalize.seen->clear();
      EXPECT_EQ(run_on(mc, x, normalize), normalized);
      // h is never split for the function; b is where the layout splits it.
      for (const std::string& s : *normalize.seen) EXPECT_NE(s.find("h:6"), std::string::npos) << s;
    }
  }
}

TEST(SlicewiseTest, SeveralOutputsOfOtherDtypesAndBFloat16AsFloat32) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, kShape, bfloat16, "x");
  SlicewiseOptions o;
  o.output_shapes = {Shape("b:4"), Shape("b:4")};
  o.output_dtypes = {bfloat16, int32};
  o.splittable_dims = {"b"};
  o.no_gradient = true;
  DType seen = int32;
  const std::vector<Tensor> y = slicewise(
      [&seen](const std::vector<HostTensor>& in) {
        seen = in[0].dtype();
        const int64_t rows = in[0].shape()[0].size, n = in[0].shape()[1].size;
        HostTensor sum(Shape({in[0].shape()[0]}), float32), arg(Shape({in[0].shape()[0]}), int32);
        for (int64_t r = 0; r < rows; ++r) {
          float s = 0, best = -1e30f;
          int32_t at = 0;
          for (int64_t j = 0; j < n; ++j) {
            const float v = in[0].data<float>()[r * n + j];
            s += v;
            if (v > best) best = v, at = static_cast<int32_t>(j);
          }
          sum.data<float>()[r] = s;
          arg.data<int32_t>()[r] = at;
        }
        return std::vector<HostTensor>{sum, arg};
      },
      {x}, o);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0].dtype(), bfloat16);
  EXPECT_EQ(y[1].dtype(), int32);
  const HostTensor xv = testing::random_tensor(kShape, 8, -1.f, 1.f).as_dtype(bfloat16);
  Session s(g, mesh_config("rows:2", "b:rows"));
  const auto out = s.run(y, {{x, xv}});
  EXPECT_EQ(seen, float32);  // widened for the function
  EXPECT_EQ(out[0].dtype(), bfloat16);
  const std::vector<float> xs = xv.to_floats();
  for (int r = 0; r < 4; ++r) {
    float sum = 0;
    int at = 0;
    for (int j = 0; j < 6; ++j) {
      sum += xs[r * 6 + j];
      if (xs[r * 6 + j] > xs[r * 6 + at]) at = j;
    }
    EXPECT_EQ(out[0].to_floats()[r],
              HostTensor::from_floats(Shape(""), {sum}, bfloat16).to_floats()[0]);
    EXPECT_EQ(out[1].data<int32_t>()[r], at);
  }
  // no_gradient: nothing flows back through the op.
  const std::vector<Tensor> gx = gradients({reduce_sum(cast(y[0], float32))}, {x});
  EXPECT_EQ(Session(g).run(gx[0], {{x, xv}}).to_floats(), std::vector<float>(24, 0.f));
}

TEST(SlicewiseTest, TheUsersGradientMatchesFiniteDifferences) {
  testing::check_gradients({kShape}, [](const std::vector<Tensor>& x) { return cube(x[0]); });
}

TEST(SlicewiseTest, TheSimulatorCountsTheGivenCost) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = zeros(mesh, Shape("b:64;h:1024"));
  SlicewiseOptions o;
  o.splittable_dims = {"b", "h"};
  o.flops_per_element = 1000;
  const Tensor y = slicewise(
      [](const std::vector<HostTensor>& in) { return std::vector<HostTensor>{in[0].clone()}; }, {x},
      o)[0];
  EXPECT_EQ(y.op().flops(), 1000.0 * 64 * 1024);
  MeshConfig sim = mesh_config("r:8", "b:r");
  sim.impl = MeshImpl::kSimulated;
  sim.sim->topology = Topology::preset("tpu-v2-8");
  sim.sim->mode = SimMode::kCostOnly;
  Session s(g, sim);
  s.run(y);
  double flops = 0;
  for (const auto& row : s.simulation_report().ops)
    if (row.op == y.op().name()) flops = row.flops;
  EXPECT_EQ(flops, 1000.0 * 64 * 1024 / 8);  // per core
}

// custom_gradient: the forward values of fn's ops, the user's gradient (a
// deliberately different one shows it is used), none through fn's ops.
TEST(CustomGradientTest, UsesTheUsersGradientForTheInputs) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, kShape, float32, "x");
  const Tensor w = placeholder(mesh, Shape("h:6"), float32, "w");
  const std::vector<Tensor> y = custom_gradient(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{log(exp(in[0]) + 1.f) * in[1]};
      },
      [](const SlicewiseCall& op, const std::vector<Tensor>& dys) {
        // Twice softplus's derivative for x (to be told apart), none for w.
        return std::vector<Tensor>{dys[0] * sigmoid(op.inputs[0]) * op.inputs[1] * 2.f, Tensor()};
      },
      {x, w});
  ASSERT_EQ(y.size(), 1u);
  const std::vector<Tensor> grads = gradients({reduce_sum(y[0])}, {x, w});
  const HostTensor xv = testing::random_tensor(kShape, 3),
                   wv = testing::random_tensor(Shape("h:6"), 4);
  Session s(g);
  const auto out = s.run({y[0], grads[0], grads[1]}, {{x, xv}, {w, wv}});
  const auto xs = xv.to_floats(), ws = wv.to_floats();
  for (int i = 0; i < 24; ++i) {
    const double sp = std::log(std::exp(double(xs[i])) + 1.0);
    EXPECT_NEAR(out[0].to_floats()[i], sp * ws[i % 6], 1e-5);
    EXPECT_NEAR(out[1].to_floats()[i], 2.0 / (1.0 + std::exp(-double(xs[i]))) * ws[i % 6], 1e-5);
    EXPECT_EQ(out[2].to_floats()[i % 6], 0.f);  // the user gave w none
  }
  EXPECT_THROW(custom_gradient([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; },
                               [](const SlicewiseCall&, const std::vector<Tensor>&) {
                                 return std::vector<Tensor>{};
                               },
                               {x}),
               ValueError);
  const Tensor bad =
      custom_gradient([](const std::vector<Tensor>& in) { return in; },
                      [](const SlicewiseCall&, const std::vector<Tensor>& dys) {
                        return std::vector<Tensor>{dys[0]};  // one gradient for two inputs
                      },
                      {x, w})[0];
  EXPECT_THROW(gradients({reduce_sum(bad)}, {x}), ValueError);
}

// Mesh TensorFlow's grad_fn form: a variable fn reads from outside is one
// of all_inputs, after the explicit ones, and gets the gradient grad_fn
// gives it; forward_operations are fn's ops.
TEST(CustomGradientTest, MeshTensorFlowsFormGivesTheTensorsFnReadTheirGradients) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, kShape, float32, "x");
  const Tensor w = get_variable(mesh, "w", Shape("h:6"), Initializer::constant(0.5f));
  size_t forward_ops = 0, all_inputs = 0;
  const std::vector<Tensor> y = custom_gradient(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; },
      [&](const CustomGradientCall& call) {
        forward_ops = call.forward_operations.size();
        all_inputs = call.all_inputs.size();
        EXPECT_TRUE(call.all_inputs[0] == x);
        EXPECT_TRUE(call.all_inputs[1] == w);
        const Tensor& dy = call.output_grads[0];
        // Three times the true gradients, to be told from them.
        return std::vector<Tensor>{dy * call.all_inputs[1] * 3.f,
                                   reduce_sum(dy * call.all_inputs[0], Shape("h:6")) * 3.f};
      },
      {x});
  const std::vector<Tensor> grads = gradients({reduce_sum(y[0])}, {x, w});
  EXPECT_EQ(all_inputs, 2u);
  EXPECT_EQ(forward_ops, 1u);  // the multiply
  const HostTensor xv = testing::random_tensor(kShape, 3);
  for (const char* layout : {"", "b:rows;h:cols"}) {
    Session s(g, mesh_config(layout[0] ? "rows:2;cols:2" : "", layout));
    const auto out = s.run({y[0], grads[0], grads[1]}, {{x, xv}});
    const auto xs = xv.to_floats();
    for (int i = 0; i < 24; ++i) {
      EXPECT_FLOAT_EQ(out[0].to_floats()[i], xs[i] * 0.5f);
      EXPECT_FLOAT_EQ(out[1].to_floats()[i], 1.5f);
    }
    for (int j = 0; j < 6; ++j) {
      float col = 0;
      for (int b = 0; b < 4; ++b) col += xs[b * 6 + j];
      EXPECT_NEAR(out[2].to_floats()[j], 3.f * col, 1e-5);
    }
  }
  // Only the explicit inputs' gradients: the rest get none.
  const Tensor z = custom_gradient(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; },
      [](const CustomGradientCall& call) { return std::vector<Tensor>{call.output_grads[0]}; },
      {x})[0];
  const std::vector<Tensor> zg = gradients({reduce_sum(z)}, {x, w});
  const auto zout = Session(g).run({zg[0], zg[1]}, {{x, xv}});
  for (float v : zout[0].to_floats()) EXPECT_EQ(v, 1.f);
  for (float v : zout[1].to_floats()) EXPECT_EQ(v, 0.f);  // w got none
  const Tensor bad =
      custom_gradient([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; },
                      [](const CustomGradientCall& call) {
                        return std::vector<Tensor>(3, call.output_grads[0]);  // three for two
                      },
                      {x})[0];
  try {
    gradients({reduce_sum(bad)}, {x});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("3 gradients for 1 inputs (2 with the tensors fn read"),
              std::string::npos)
        << e.what();
  }
}

TEST(SlicewiseTest, MisuseIsAClearError) {
  Graph g;
  Mesh mesh(g, "mesh");
  const Tensor x = placeholder(mesh, kShape, float32, "x");
  auto identity = [](const std::vector<HostTensor>& in) { return in; };
  SlicewiseOptions unknown;
  unknown.splittable_dims = {"w"};
  EXPECT_THROW(slicewise(identity, {x}, unknown), ValueError);
  SlicewiseOptions dropped;
  dropped.output_shapes = {Shape("b:4")};
  dropped.splittable_dims = {"h"};  // h is not in the output
  EXPECT_THROW(slicewise(identity, {x}, dropped), ValueError);
  SlicewiseOptions mismatched;
  mismatched.output_shapes = {kShape, kShape};
  mismatched.output_dtypes = {float32};
  EXPECT_THROW(slicewise(identity, {x}, mismatched), ValueError);
  EXPECT_THROW(slicewise(identity, {}), ValueError);
  EXPECT_THROW(slicewise(nullptr, {x}), ValueError);

  // At run time: the wrong count, shape or dtype names the op.
  SlicewiseOptions two;
  two.output_shapes = {kShape, kShape};
  const Tensor a = slicewise(identity, {x}, two)[0];
  const Tensor b = cwise(
      [](const std::vector<HostTensor>&) {
        return std::vector<HostTensor>{HostTensor(Shape("b:4"), float32)};
      },
      {x}, {}, "wrong_shape");
  const Tensor c = cwise(
      [](const std::vector<HostTensor>& in) {
        return std::vector<HostTensor>{HostTensor(in[0].shape(), int32)};
      },
      {x}, {}, "wrong_dtype");
  Session s(g);
  const Feeds feeds = {{x, testing::random_tensor(kShape, 1)}};
  for (const auto& [t, want] : std::vector<std::pair<Tensor, std::string>>{
           {a, "returned 1 tensors for 2 outputs"}, {b, "wrong_shape"}, {c, "int32"}}) {
    try {
      s.run(t, feeds);
      ADD_FAILURE() << "no error for " << want;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  // No gradient function: differentiating through the op says what to do.
  try {
    gradients({reduce_sum(b)}, {x});
    ADD_FAILURE() << "a gradient through an op without one";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("has no gradient"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mtf
