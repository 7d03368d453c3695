#include "runtime/optim/clip_grad.h"

#include <cmath>

#include "runtime/autograd/grad_mode.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/py_format.h"

namespace ember::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) return 0.0;
  // As torch: the per-gradient norms meet on the first gradient's device, and
  // each gradient is scaled by the coefficient moved to its own device.
  const Device device = grads[0].device();
  std::vector<Tensor> norms;
  Tensor total;
  if (std::isinf(norm_type) && norm_type > 0) {
    for (const Tensor& g : grads) norms.push_back(ember::max(ember::abs(g)).to(device));
    total = norms.size() == 1 ? norms[0] : ember::max(stack(norms));
  } else {
    for (const Tensor& g : grads) norms.push_back(ember::norm(g, norm_type).to(device));
    total = ember::norm(stack(norms), norm_type);
  }
  const double value = total.item<double>();
  EMBER_ENFORCE(!error_if_nonfinite || std::isfinite(value), Status::InvalidState, "The total norm of order ",
              detail::python_float(norm_type),
              " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
              "and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  const Tensor clip_coef = max_norm / (total + 1e-6);
  const Tensor clip_coef_clamped = ember::clamp(clip_coef, std::nullopt, Scalar(1.0));
  for (Tensor& g : grads) g.mul_(clip_coef_clamped.to(g.device()));
  return value;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(Scalar(-clip_value), Scalar(clip_value));
  }
}

}  // namespace ember::optim
