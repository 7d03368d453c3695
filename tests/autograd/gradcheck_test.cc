// Finite-difference checks (float64, central differences) of the backward rule
// of every differentiable op: odd shapes, broadcasting, non-contiguous inputs.
#include "tests/harness/gradcheck.h"
#include "tests/harness/testing.h"

using namespace ember;
using ember::testing::gradcheck;
using ember::testing::leaf;
using V = std::vector<Tensor>;

namespace {

Tensor rnd(IntArrayRef shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape, DType::Float64);
}

// Positive values away from zero (log, sqrt, pow, div).
Tensor pos(IntArrayRef shape, uint64_t seed) {
  manual_seed(seed);
  return rand(shape, DType::Float64) + 0.5;
}

// A non-contiguous leaf: the transpose of a [cols, rows] tensor.
Tensor transposed(int64_t rows, int64_t cols, uint64_t seed) { return leaf(rnd({cols, rows}, seed).t()); }

}  // namespace

TEST_CASE("binary ops with broadcasting") {
  const Tensor a = leaf(rnd({3, 1, 4}, 1)), b = leaf(rnd({2, 1}, 2));
  gradcheck([](const V& x) { return x[0] + x[1]; }, {a, b});
  gradcheck([](const V& x) { return x[0] - x[1]; }, {a, b});
  gradcheck([](const V& x) { return x[0] * x[1]; }, {a, b});
  gradcheck([](const V& x) { return x[0] / (x[1] * x[1] + 1); }, {a, b});
  gradcheck([](const V& x) { return maximum(x[0], x[1]); }, {a, b});
  gradcheck([](const V& x) { return minimum(x[0], x[1]); }, {a, b});
  const Tensor p = leaf(pos({2, 3}, 3)), q = leaf(rnd({3}, 4));
  gradcheck([](const V& x) { return pow(x[0], x[1]); }, {p, q});
  gradcheck([](const V& x) { return pow(x[0], 2.5); }, {p});
  gradcheck([](const V& x) { return pow(2.0, x[0]); }, {p});
  gradcheck([](const V& x) { return 1.5 - x[0] / 3 + 2 * x[0]; }, {p});
}

TEST_CASE("binary ops on non-contiguous inputs") {
  const Tensor a = transposed(3, 5, 5), b = transposed(3, 5, 6);
  CHECK(!a.is_contiguous());
  gradcheck([](const V& x) { return x[0] * x[1] + x[0]; }, {a, b});
  gradcheck([](const V& x) { return x[0] / (x[1].abs() + 1); }, {a, b});
}

TEST_CASE("unary ops") {
  const Tensor x = leaf(rnd({2, 5}, 7)), p = leaf(pos({7}, 8));
  gradcheck([](const V& v) { return -v[0]; }, {x});
  gradcheck([](const V& v) { return abs(v[0]); }, {x});
  gradcheck([](const V& v) { return exp(v[0]); }, {x});
  gradcheck([](const V& v) { return log(v[0]); }, {p});
  gradcheck([](const V& v) { return sqrt(v[0]); }, {p});
  gradcheck([](const V& v) { return rsqrt(v[0]); }, {p});
  gradcheck([](const V& v) { return sin(v[0]); }, {x});
  gradcheck([](const V& v) { return cos(v[0]); }, {x});
  gradcheck([](const V& v) { return tanh(v[0]); }, {x});
  gradcheck([](const V& v) { return sigmoid(v[0]); }, {x});
  gradcheck([](const V& v) { return relu(v[0]); }, {x});
  gradcheck([](const V& v) { return gelu(v[0]); }, {x});
  gradcheck([](const V& v) { return gelu(v[0], "tanh"); }, {x});
  gradcheck([](const V& v) { return silu(v[0]); }, {x});
  gradcheck([](const V& v) { return erf(v[0]); }, {x});
  gradcheck([](const V& v) { return clamp(v[0], -0.5, 0.7); }, {x});
  gradcheck([](const V& v) { return clamp(v[0], std::nullopt, 0.1); }, {x});
  gradcheck([](const V& v) { return exp(v[0].t()); }, {transposed(4, 3, 9)});
}

TEST_CASE("unary math ops, away from their non-differentiable points") {
  const Tensor x = leaf(rnd({3, 7}, 12)), p = leaf(pos({5}, 13));
  manual_seed(14);
  const Tensor unit = leaf(rand({2, 5}, DType::Float64) * 1.6 - 0.8);  // asin, acos, atanh, log1p
  const Tensor above = leaf(pos({6}, 15) + 1.0);                          // acosh: > 1.5
  manual_seed(16);
  const Tensor wide = leaf(randn({4, 6}, DType::Float64) * 12 + 0.3);     // softplus on both sides of 20
  gradcheck([](const V& v) { return reciprocal(v[0]); }, {p});
  gradcheck([](const V& v) { return reciprocal(-v[0]); }, {p});
  gradcheck([](const V& v) { return tan(v[0]); }, {unit});
  gradcheck([](const V& v) { return asin(v[0]); }, {unit});
  gradcheck([](const V& v) { return acos(v[0]); }, {unit});
  gradcheck([](const V& v) { return atan(v[0]); }, {x});
  gradcheck([](const V& v) { return sinh(v[0]); }, {x});
  gradcheck([](const V& v) { return cosh(v[0]); }, {x});
  gradcheck([](const V& v) { return asinh(v[0]); }, {x});
  gradcheck([](const V& v) { return acosh(v[0]); }, {above});
  gradcheck([](const V& v) { return atanh(v[0]); }, {unit});
  gradcheck([](const V& v) { return softsign(v[0]); }, {x});
  gradcheck([](const V& v) { return mish(v[0]); }, {x});
  gradcheck([](const V& v) { return mish(v[0]); }, {wide});
  gradcheck([](const V& v) { return softplus(v[0]); }, {x});
  gradcheck([](const V& v) { return softplus(v[0]); }, {wide});
  gradcheck([](const V& v) { return expm1(v[0]); }, {x});
  gradcheck([](const V& v) { return log1p(v[0]); }, {unit});
  gradcheck([](const V& v) { return atan(v[0].t()); }, {transposed(4, 3, 17)});
  // Piecewise constant (away from the jumps, halves included for round): zero gradients.
  manual_seed(18);
  const Tensor steps = leaf(floor(randn({3, 4}, DType::Float64) * 4) + 0.3);
  using Fn = Tensor (*)(const Tensor&);
  for (Fn fn : {Fn(&ember::floor), Fn(&ember::ceil), Fn(&ember::round), Fn(&ember::sign)}) {
    gradcheck([fn](const V& v) { return fn(v[0]) + v[0]; }, {steps});
  }
  const Tensor s = leaf(rnd({3}, 19));
  (ember::floor(s) + ember::round(s) + ember::ceil(s) + ember::sign(s)).sum().backward();
  ember::testing::check_equal(s.grad(), zeros({3}, DType::Float64));
}

TEST_CASE("unary math ops record PyTorch's grad_fn names") {
  const Tensor x = leaf(pos({3}, 20) * 0.5);
  CHECK(reciprocal(x).grad_fn()->name() == "ReciprocalBackward0");
  CHECK(floor(x).grad_fn()->name() == "FloorBackward0");
  CHECK(ceil(x).grad_fn()->name() == "CeilBackward0");
  CHECK(round(x).grad_fn()->name() == "RoundBackward0");
  CHECK(sign(x).grad_fn()->name() == "SignBackward0");
  CHECK(tan(x).grad_fn()->name() == "TanBackward0");
  CHECK(asin(x).grad_fn()->name() == "AsinBackward0");
  CHECK(acos(x).grad_fn()->name() == "AcosBackward0");
  CHECK(atan(x).grad_fn()->name() == "AtanBackward0");
  CHECK(sinh(x).grad_fn()->name() == "SinhBackward0");
  CHECK(cosh(x).grad_fn()->name() == "CoshBackward0");
  CHECK(asinh(x).grad_fn()->name() == "AsinhBackward0");
  CHECK(acosh(x + 1).grad_fn()->name() == "AcoshBackward0");
  CHECK(atanh(x).grad_fn()->name() == "AtanhBackward0");
  CHECK(mish(x).grad_fn()->name() == "MishBackward0");
  CHECK(softplus(x).grad_fn()->name() == "SoftplusBackward0");
  CHECK(expm1(x).grad_fn()->name() == "Expm1Backward0");
  CHECK(log1p(x).grad_fn()->name() == "Log1PBackward0");
  // PyTorch composes softsign (x / (1 + |x|): DivBackward0); here it is one op with its own rule.
  CHECK(softsign(x).grad_fn()->name() == "DivBackward0");  // composite in torch 1.13: x / (1 + |x|)
}

TEST_CASE("activations, away from their kinks, and their grad_fn names") {
  manual_seed(21);
  // randn * 3 + 0.05: values near 0, +-3 (hardswish, hardsigmoid) and 1 (thresholded_relu) are rare.
  const Tensor x = leaf(randn({3, 7}, DType::Float64) * 3 + 0.05);
  gradcheck([](const V& v) { return hardswish(v[0]); }, {x});
  gradcheck([](const V& v) { return hardsigmoid(v[0]); }, {x});
  gradcheck([](const V& v) { return leaky_relu(v[0]); }, {x});
  gradcheck([](const V& v) { return leaky_relu(v[0], 0.3); }, {x});
  gradcheck([](const V& v) { return elu(v[0]); }, {x});
  gradcheck([](const V& v) { return elu(v[0], 0.5); }, {x});
  gradcheck([](const V& v) { return selu(v[0]); }, {x});
  gradcheck([](const V& v) { return celu(v[0]); }, {x});
  gradcheck([](const V& v) { return celu(v[0], 2.5); }, {x});
  gradcheck([](const V& v) { return thresholded_relu(v[0]); }, {x});
  gradcheck([](const V& v) { return thresholded_relu(v[0], -0.7); }, {x});
  gradcheck([](const V& v) { return hardsigmoid_p(v[0].t(), 0.3, 0.4); }, {transposed(4, 3, 22)});
  CHECK(hardswish(x).grad_fn()->name() == "HardswishBackward0");
  CHECK(hardsigmoid(x).grad_fn()->name() == "HardsigmoidBackward0");
  CHECK(leaky_relu(x).grad_fn()->name() == "LeakyReluBackward0");
  CHECK(elu(x).grad_fn()->name() == "EluBackward0");
  CHECK(selu(x).grad_fn()->name() == "EluBackward0");  // PyTorch's selu runs elu
  CHECK(celu(x).grad_fn()->name() == "CeluBackward0");
  CHECK(thresholded_relu(x).grad_fn()->name() == "ThresholdedReluBackward0");
}

TEST_CASE("where, dtype conversion, clone, contiguous") {
  const Tensor a = leaf(rnd({2, 3}, 10)), b = leaf(rnd({3}, 11));
  const Tensor c = tensor({{true, false, true}, {false, false, true}});
  gradcheck([c](const V& v) { return where(c, v[0], v[1]); }, {a, b});
  gradcheck([](const V& v) { return v[0].to(DType::Float32).to(DType::Float64) * 2; }, {a}, 1e-3, 1e-4, 1e-3);
  gradcheck([](const V& v) { return v[0].clone() * v[0].t().contiguous().t(); }, {a});
}

TEST_CASE("view ops") {
  const Tensor x = leaf(rnd({2, 3, 4}, 12));
  gradcheck([](const V& v) { return v[0].view({6, 4}) * 2; }, {x});
  gradcheck([](const V& v) { return v[0].reshape({4, 6}); }, {x});
  gradcheck([](const V& v) { return v[0].transpose(0, 2).reshape({24}); }, {x});
  gradcheck([](const V& v) { return v[0].permute({2, 0, 1}) * 3; }, {x});
  gradcheck([](const V& v) { return v[0].flatten(1); }, {x});
  gradcheck([](const V& v) { return v[0].unsqueeze(1).squeeze(1).squeeze(); }, {x});
  gradcheck([](const V& v) { return v[0].narrow(2, 1, 2); }, {x});
  gradcheck([](const V& v) { return v[0].select(1, -1); }, {x});
  gradcheck([](const V& v) { return v[0].slice(2, 0, 4, 3); }, {x});
  gradcheck([](const V& v) { return v[0].unfold(2, 2, 1); }, {x});
  gradcheck([](const V& v) { return v[0].unfold(1, 2, 2) * v[0].unfold(1, 2, 2); }, {x});
  gradcheck([](const V& v) { return v[0][1].t(); }, {x});
  gradcheck([](const V& v) { return v[0].select(0, 0).unsqueeze(0).expand({5, 3, 4}); }, {x});
  gradcheck([](const V& v) { return v[0].as_strided({3, 2}, {1, 3}, 2); }, {leaf(rnd({9}, 13))});
}

TEST_CASE("reductions") {
  const Tensor x = leaf(rnd({3, 4, 2}, 14));
  gradcheck([](const V& v) { return v[0].sum(); }, {x});
  gradcheck([](const V& v) { return v[0].sum({0, 2}); }, {x});
  gradcheck([](const V& v) { return v[0].sum({1}, true); }, {x});
  gradcheck([](const V& v) { return v[0].mean({-1}); }, {x});
  gradcheck([](const V& v) { return v[0].mean(); }, {x});
  gradcheck([](const V& v) { return prod(v[0], 1); }, {leaf(pos({3, 4}, 15))});
  gradcheck([](const V& v) { return prod(v[0]); }, {leaf(pos({5}, 16))});
  gradcheck([](const V& v) { return var(v[0], std::vector<int64_t>{1}); }, {x});
  gradcheck([](const V& v) { return var(v[0], std::nullopt, 0, true); }, {x});
  gradcheck([](const V& v) { return ember::std(v[0], std::vector<int64_t>{0, 2}); }, {x});
  gradcheck([](const V& v) { return norm(v[0]); }, {x});
  gradcheck([](const V& v) { return norm(v[0], 1.0, {1}); }, {x});
  gradcheck([](const V& v) { return norm(v[0], 3.0, {0}, true); }, {x});
  gradcheck([](const V& v) { return norm(v[0], INFINITY, {2}); }, {x});
  gradcheck([](const V& v) { return max(v[0], 1).first; }, {x});
  gradcheck([](const V& v) { return min(v[0], 0, true).first; }, {x});
  gradcheck([](const V& v) { return max(v[0]); }, {x});
  gradcheck([](const V& v) { return min(v[0]); }, {x});
  gradcheck([](const V& v) { return v[0].t().sum({0}); }, {transposed(3, 5, 17)});
}

TEST_CASE("ties: max over all elements shares the gradient, max over a dim picks the first") {
  Tensor x = tensor({1.0, 3.0, 3.0}, DType::Float64).requires_grad_();
  max(x).backward();
  ember::testing::check_equal(x.grad(), tensor({0.0, 0.5, 0.5}, DType::Float64));
  Tensor y = tensor({{3.0, 1.0, 3.0}}, DType::Float64).requires_grad_();
  max(y, 1).first.sum().backward();
  ember::testing::check_equal(y.grad(), tensor({{1.0, 0.0, 0.0}}, DType::Float64));
}

TEST_CASE("matmul family") {
  const Tensor a = leaf(rnd({3, 4}, 18)), b = leaf(rnd({4, 2}, 19));
  gradcheck([](const V& v) { return mm(v[0], v[1]); }, {a, b});
  gradcheck([](const V& v) { return matmul(v[0].t(), v[0]); }, {a});
  const Tensor ba = leaf(rnd({2, 3, 4}, 20)), bb = leaf(rnd({2, 4, 5}, 21));
  gradcheck([](const V& v) { return bmm(v[0], v[1]); }, {ba, bb});
  // Broadcast batch dims, 1-D operands, folded paths.
  gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {leaf(rnd({2, 1, 3, 4}, 22)), leaf(rnd({5, 4, 2}, 23))});
  gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {leaf(rnd({4}, 24)), leaf(rnd({4}, 25))});
  gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {leaf(rnd({3, 4}, 26)), leaf(rnd({4}, 27))});
  gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {leaf(rnd({4}, 28)), leaf(rnd({2, 4, 3}, 29))});
  gradcheck([](const V& v) { return matmul(v[0], v[1]); }, {leaf(rnd({2, 3, 4}, 30)), leaf(rnd({4, 2}, 31))});
  gradcheck([](const V& v) { return linear(v[0], v[1], v[2]); },
            {leaf(rnd({5, 3}, 32)), leaf(rnd({2, 3}, 33)), leaf(rnd({2}, 34))});
  gradcheck([](const V& v) { return linear(v[0], v[1]); }, {leaf(rnd({2, 5, 3}, 35)), leaf(rnd({4, 3}, 36))});
}
