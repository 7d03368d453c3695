// gradcheck: compares autograd's gradients with central finite differences in
// float64. f maps the inputs to a tensor of any shape; it is reduced to a
// scalar with a fixed random projection, whose gradient both ways must agree.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "runtime/ember.h"

namespace ember::testing {

using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

// A float64 leaf that requires grad, from any tensor (keeps its strides, so
// non-contiguous inputs stay non-contiguous).
inline Tensor leaf(const Tensor& t) {
  Tensor d = t.detach().to(DType::Float64);
  if (d.is_same(t)) d = t.detach();
  return d.requires_grad_();
}

inline void gradcheck(const GradFn& f, const std::vector<Tensor>& inputs, double eps = 1e-6,
                      double atol = 1e-6, double rtol = 1e-4) {
  // Analytic: d/dx sum(f(x) * v).
  for (const Tensor& x : inputs) {
    if (x.requires_grad()) x.set_grad(Tensor());
  }
  const Tensor out = f(inputs);
  manual_seed(1234);
  const Tensor v = randn(out.sizes(), DType::Float64);
  (out.to(DType::Float64) * v).sum().backward();

  // Numerical, one element at a time, on contiguous copies of the inputs.
  NoGradGuard no_grad;
  std::vector<Tensor> values;
  for (const Tensor& x : inputs) values.push_back(x.detach().contiguous().clone());
  auto loss = [&]() { return (f(values).to(DType::Float64) * v).sum().item<double>(); };
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].requires_grad()) continue;
    CAPTURE(k);
    const Tensor analytic = inputs[k].grad();
    REQUIRE_MESSAGE(analytic.defined(), "input " << k << " got no gradient");
    REQUIRE(analytic.sizes() == inputs[k].sizes());
    const Tensor a = analytic.to(DType::Float64).contiguous();
    double* p = values[k].data_ptr<double>();
    for (int64_t i = 0; i < values[k].numel(); ++i) {
      const double saved = p[i];
      p[i] = saved + eps;
      const double up = loss();
      p[i] = saved - eps;
      const double down = loss();
      p[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      const double got = a.data_ptr<double>()[i];
      CHECK_MESSAGE(std::fabs(got - numeric) <= atol + rtol * std::fabs(numeric),
                    "input " << k << " element " << i << ": autograd " << got << " vs numeric " << numeric);
    }
  }
}

}  // namespace ember::testing
