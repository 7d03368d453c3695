// SGD, Adam and AdamW as torch 1.13's _single_tensor_* functions compute them,
// operation for operation (add with alpha is b * alpha added; addcmul and
// addcdiv evaluate value * t1 first, as PyTorch's CPU kernels do).
#include "runtime/optim/optimizer.h"

#include <cmath>
#include <utility>

#include "runtime/autograd/grad_mode.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/py_format.h"

namespace ember::optim {
namespace {

using detail::python_float;

void check_value(bool ok, const char* what, double value) {
  EMBER_ENFORCE(ok, Status::InvalidArgument, what, python_float(value));
}

// self = self + other * alpha, in place.
void add_scaled_(Tensor& self, const Tensor& other, double alpha) { self.add_(other * alpha); }

// Adam's moment updates and parameter step, shared by Adam and AdamW (whose
// decoupled weight decay the caller applies first).
void adam_update(Tensor& param, Tensor grad, AdamState& state, double lr, double beta1, double beta2,
                 double eps, double weight_decay, bool amsgrad) {
  if (state.step == 0) {
    state.exp_avg = zeros_like(param);
    state.exp_avg_sq = zeros_like(param);
    if (amsgrad) state.max_exp_avg_sq = zeros_like(param);
  }
  state.step += 1;
  if (weight_decay != 0) grad = grad + param * weight_decay;
  state.exp_avg.mul_(beta1);
  add_scaled_(state.exp_avg, grad, 1 - beta1);
  state.exp_avg_sq.mul_(beta2);
  state.exp_avg_sq.add_(grad * (1 - beta2) * grad);

  const double step = static_cast<double>(state.step);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  Tensor denom;
  if (amsgrad) {
    state.max_exp_avg_sq.copy_(maximum(state.max_exp_avg_sq, state.exp_avg_sq));
    denom = ember::sqrt(state.max_exp_avg_sq) / bias_correction2_sqrt + eps;
  } else {
    denom = ember::sqrt(state.exp_avg_sq) / bias_correction2_sqrt + eps;
  }
  param.add_(state.exp_avg * -step_size / denom);
}

void check_adam_options(double lr, double eps, double beta1, double beta2, double weight_decay) {
  check_value(0.0 <= lr, "Invalid learning rate: ", lr);
  check_value(0.0 <= eps, "Invalid epsilon value: ", eps);
  check_value(0.0 <= beta1 && beta1 < 1.0, "Invalid beta parameter at index 0: ", beta1);
  check_value(0.0 <= beta2 && beta2 < 1.0, "Invalid beta parameter at index 1: ", beta2);
  check_value(0.0 <= weight_decay, "Invalid weight_decay value: ", weight_decay);
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {
  EMBER_ENFORCE(!params_.empty(), Status::InvalidArgument, "optimizer got an empty parameter list");
  for (const Tensor& p : params_) {
    EMBER_ENFORCE(p.defined(), Status::InvalidArgument, "optimizer can only optimize Tensors");
    EMBER_ENFORCE(p.is_leaf(), Status::InvalidArgument, "can't optimize a non-leaf Tensor");
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const Tensor& p : params_) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
      continue;
    }
    if (g.grad_fn()) {
      g.detach_();
    } else {
      g.requires_grad_(false);
    }
    g.zero_();
  }
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params), options.lr), options_(options), momentum_buffers_(params_.size()) {
  check_value(options.lr >= 0.0, "Invalid learning rate: ", options.lr);
  check_value(options.momentum >= 0.0, "Invalid momentum value: ", options.momentum);
  check_value(options.weight_decay >= 0.0, "Invalid weight_decay value: ", options.weight_decay);
  EMBER_ENFORCE(!(options.nesterov && (options.momentum <= 0 || options.dampening != 0)), Status::InvalidArgument,
              "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& param = params_[i];
    Tensor d_p = param.grad();
    if (!d_p.defined()) continue;
    if (o.weight_decay != 0) d_p = d_p + param * o.weight_decay;
    if (o.momentum != 0) {
      Tensor& buf = momentum_buffers_[i];
      if (!buf.defined()) {
        buf = d_p.clone();
      } else {
        buf.mul_(o.momentum);
        add_scaled_(buf, d_p, 1 - o.dampening);
      }
      d_p = o.nesterov ? d_p + buf * o.momentum : buf;
    }
    add_scaled_(param, d_p, -lr_);
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params), options.lr), options_(options), state_(params_.size()) {
  check_adam_options(options.lr, options.eps, options.beta1, options.beta2, options.weight_decay);
}

void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;
    adam_update(params_[i], grad, state_[i], lr_, o.beta1, o.beta2, o.eps, o.weight_decay, o.amsgrad);
  }
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Optimizer(std::move(params), options.lr), options_(options), state_(params_.size()) {
  check_adam_options(options.lr, options.eps, options.beta1, options.beta2, options.weight_decay);
}

void AdamW::step() {
  NoGradGuard no_grad;
  const AdamWOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;
    params_[i].mul_(1 - lr_ * o.weight_decay);
    adam_update(params_[i], grad, state_[i], lr_, o.beta1, o.beta2, o.eps, /*weight_decay=*/0.0, o.amsgrad);
  }
}

}  // namespace ember::optim
