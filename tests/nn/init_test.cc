// nn::init against torch.nn.init (PyTorch 1.13) with the same seeds.
#include <cmath>

#include "runtime/nn/init.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::check_equal;
using ember::testing::check_error;
using ember::testing::golden;
namespace init = ember::nn::init;

namespace {
template <typename F>
Tensor seeded(uint64_t seed, Shape shape, F&& fn, DType dtype = DType::Float32) {
  manual_seed(seed);
  Tensor t = ember::empty(shape, dtype);
  fn(t);
  return t;
}
}  // namespace

TEST_CASE("kaiming and xavier draw PyTorch's values") {
  check_equal(seeded(0, {5, 7}, [](Tensor& t) { init::kaiming_uniform_(t); }),
              golden("nnm.init.kaiming_uniform.default"));
  check_equal(seeded(1, {4, 3, 3, 3}, [](Tensor& t) { init::kaiming_uniform_(t, 0.2, "fan_out", "relu"); }),
              golden("nnm.init.kaiming_uniform.fan_out_relu"));
  check_equal(seeded(2, {6, 5}, [](Tensor& t) { init::kaiming_uniform_(t, std::sqrt(5.0)); }, DType::Float64),
              golden("nnm.init.kaiming_uniform.f64"));
  check_close(seeded(3, {4, 3, 3, 3}, [](Tensor& t) { init::kaiming_normal_(t); }),
              golden("nnm.init.kaiming_normal.big"), 0, 1e-6);
  check_equal(seeded(4, {3, 4}, [](Tensor& t) { init::kaiming_normal_(t, 0, "fan_out"); }),
              golden("nnm.init.kaiming_normal.small"));
  check_equal(seeded(5, {8, 4}, [](Tensor& t) { init::kaiming_normal_(t, 0, "fan_in", "tanh"); }, DType::Float64),
              golden("nnm.init.kaiming_normal.f64"));
  check_equal(seeded(6, {6, 5}, [](Tensor& t) { init::xavier_uniform_(t, 2.0); }),
              golden("nnm.init.xavier_uniform.gain2"));
  check_equal(seeded(7, {4, 2, 3, 3}, [](Tensor& t) { init::xavier_uniform_(t); }),
              golden("nnm.init.xavier_uniform.conv"));
  check_close(seeded(8, {6, 5}, [](Tensor& t) { init::xavier_normal_(t); }), golden("nnm.init.xavier_normal.big"),
              0, 1e-6);
  check_equal(seeded(9, {2, 3}, [](Tensor& t) { init::xavier_normal_(t, 0.5); }),
              golden("nnm.init.xavier_normal.small"));
}

TEST_CASE("normal_ and uniform_ draw PyTorch's values") {
  check_close(seeded(10, {37}, [](Tensor& t) { init::normal_(t, 0.3, 0.77); }), golden("nnm.init.normal.f32"), 0,
              1e-6);
  check_equal(seeded(11, {5}, [](Tensor& t) { init::normal_(t, -1.5, 2.0); }), golden("nnm.init.normal.f32.small"));
  check_equal(seeded(12, {40}, [](Tensor& t) { init::normal_(t, 0.3, 0.77); }, DType::Float64),
              golden("nnm.init.normal.f64"));
  check_equal(seeded(13, {7}, [](Tensor& t) { init::normal_(t, 0.3, 0.77); }, DType::Float64),
              golden("nnm.init.normal.f64.small"));
  check_equal(seeded(14, {33}, [](Tensor& t) { init::uniform_(t, -0.37, 0.91); }), golden("nnm.init.uniform.f32"));
  check_equal(seeded(15, {33}, [](Tensor& t) { init::uniform_(t, -0.37, 0.91); }, DType::Float64),
              golden("nnm.init.uniform.f64"));
  // Non-contiguous targets are written through their strides.
  manual_seed(14);
  Tensor base = zeros({33, 2});
  init::uniform_(base.select(1, 1), -0.37, 0.91);
  check_equal(base.select(1, 1).contiguous(), golden("nnm.init.uniform.f32"));
  check_equal(base.select(1, 0).contiguous(), zeros({33}));
  check_error([] { init::uniform_(empty({2}), 1.0, 0.0); },
              "uniform_ expects to return a [from, to) range, but found from=1 > to=0");
  check_error([] { init::normal_(empty({2}), 0.0, -1.0); }, "normal expects std >= 0.0, but found std -1");
  check_error([] { init::uniform_(empty({2}, DType::Int64)); }, "\"check_uniform_bounds\" not implemented for 'Long'");
}

TEST_CASE("trunc_normal_ matches PyTorch's inverse-CDF algorithm") {
  check_close(seeded(16, {64}, [](Tensor& t) { init::trunc_normal_(t); }), golden("nnm.init.trunc_normal.default"), 0,
              1e-6);
  check_close(seeded(17, {50}, [](Tensor& t) { init::trunc_normal_(t, 0.5, 2.0, -1.0, 3.0); }),
              golden("nnm.init.trunc_normal.args"), 0, 1e-6);
  check_close(seeded(18, {50}, [](Tensor& t) { init::trunc_normal_(t, 0.5, 2.0, -1.0, 3.0); }, DType::Float64),
              golden("nnm.init.trunc_normal.f64"), 0, 1e-12);
  // Bounds and moments of a large draw: N(0, 1) truncated to [-1, 2].
  manual_seed(5);
  Tensor t = empty({200000});
  init::trunc_normal_(t, 0.0, 1.0, -1.0, 2.0);
  CHECK(t.min().item<double>() >= -1.0);
  CHECK(t.max().item<double>() <= 2.0);
  // Truncated normal on [a, b]: mean = (phi(a) - phi(b)) / Z.
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto cdf = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double z = cdf(2.0) - cdf(-1.0);
  const double mean = (phi(-1.0) - phi(2.0)) / z;
  const double var = 1 + (-1.0 * phi(-1.0) - 2.0 * phi(2.0)) / z - mean * mean;
  CHECK(std::fabs(t.mean().item<double>() - mean) < 0.01);
  CHECK(std::fabs(ember::var(t).item<double>() - var) < 0.01);
}

TEST_CASE("orthogonal_: orthonormal rows or columns, PyTorch's values, gain") {
  Tensor tall = seeded(19, {6, 4}, [](Tensor& t) { init::orthogonal_(t); });
  check_close(tall, golden("nnm.init.orthogonal.tall"), 0, 1e-5);
  check_close(tall.t().matmul(tall), eye(4), 0, 1e-5);
  Tensor wide = seeded(20, {3, 7}, [](Tensor& t) { init::orthogonal_(t, 2.0); });
  check_close(wide, golden("nnm.init.orthogonal.wide"), 0, 1e-5);
  check_close(wide.matmul(wide.t()), eye(3) * 4.0, 0, 1e-5);
  Tensor conv = seeded(21, {4, 2, 2, 2}, [](Tensor& t) { init::orthogonal_(t); });
  check_close(conv, golden("nnm.init.orthogonal.conv"), 0, 1e-5);
  Tensor flat = conv.reshape({4, 8});
  check_close(flat.matmul(flat.t()), eye(4), 0, 1e-5);
  check_close(seeded(22, {5, 5}, [](Tensor& t) { init::orthogonal_(t); }, DType::Float64),
              golden("nnm.init.orthogonal.f64"), 0, 1e-12);
  check_error([] { init::orthogonal_(empty({3})); }, "Only tensors with 2 or more dimensions are supported");
  Tensor none = empty({0, 3});
  init::orthogonal_(none);  // no-op
  CHECK(none.numel() == 0);
}

TEST_CASE("fans, gains and their errors") {
  const Tensor fans = golden("nnm.init.fans");
  const Shape shapes[] = {{3, 4}, {5, 4, 3, 2}, {2, 3, 7}};
  for (int i = 0; i < 3; ++i) {
    const auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(ember::empty(shapes[i]));
    CHECK(fan_in == fans[i][0].item<int64_t>());
    CHECK(fan_out == fans[i][1].item<int64_t>());
  }
  const Tensor gains = golden("nnm.init.gains");
  const char* names[] = {"linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"};
  for (int i = 0; i < 7; ++i) CHECK(init::calculate_gain(names[i]) == gains[i].item<double>());
  CHECK(init::calculate_gain("leaky_relu", 0.2) == gains[7].item<double>());
  CHECK(init::calculate_gain("leaky_relu", std::sqrt(5.0)) == gains[8].item<double>());
  check_error([] { init::calculate_fan_in_and_fan_out(empty({3})); },
              "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  check_error([] { init::xavier_uniform_(empty({3})); },
              "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  check_error([] { init::calculate_gain("foo"); }, "Unsupported nonlinearity foo");
  check_error([] { init::kaiming_uniform_(empty({3, 4}), 0, "fan_avg"); },
              "Mode fan_avg not supported, please use one of ['fan_in', 'fan_out']");
  check_error([] { init::kaiming_normal_(empty({3, 4}), 0, "fan_in", "softplus"); },
              "Unsupported nonlinearity softplus");
  check_error([] { init::eye_(empty({3, 4, 5})); }, "Only tensors with 2 dimensions are supported");
  // Zero-element tensors: kaiming is a no-op (PyTorch only warns).
  Tensor z = empty({0, 4});
  init::kaiming_uniform_(z);
  CHECK(z.numel() == 0);
}

TEST_CASE("deterministic fills; in place on leaves that require grad") {
  Tensor w = empty({2, 3}).requires_grad_();
  init::ones_(w);
  check_equal(w.detach(), ones({2, 3}));
  init::zeros_(w);
  check_equal(w.detach(), zeros({2, 3}));
  init::constant_(w, 0.25);
  check_equal(w.detach(), full({2, 3}, 0.25));
  init::eye_(w);
  check_equal(w.detach(), eye(2, 3));
  init::kaiming_uniform_(w);  // no "leaf Variable ... in-place" error: runs without grad
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
  CHECK(w.grad_fn() == nullptr);
  Tensor same = init::normal_(w);
  CHECK(same.is_same(w));
}
