// Softmax, log_softmax, layer_norm and batch_norm (inference form) front-ends:
// PyTorch's argument checks and messages, output allocation, dispatch.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

Tensor softmax_forward(OpKind op, const Tensor& in, int64_t d) {
  EMBER_ENFORCE(in.dim() <= kMaxRank, Status::NotSupported, "softmax supports up to ", kMaxRank,
              " dimensions, got ", in.dim());
  Tensor out = empty_like(in);
  if (in.numel() == 0) return out;  // PyTorch returns before its dtype dispatch
  const bool last = in.dim() == 0 || d == in.dim() - 1;
  EMBER_ENFORCE(in.is_floating_point(), Status::NotSupported, "\"",
              last ? (op == OpKind::Softmax ? "softmax_lastdim_kernel_impl" : "log_softmax_lastdim_kernel_impl")
                   : "softmax_kernel_impl",
              "\" not implemented for '", dtype_legacy_name(in.dtype()), "'");
  SoftmaxParams params;
  params.dim = static_cast<int>(d);
  unwrap(run_kernel(op, {in}, {out}, params));
  return out;
}

// The conversion to `dtype` is recorded (ToCopyBackward0) before the op, as in PyTorch.
Tensor softmax_impl(OpKind op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const int64_t d = wrap_dim(dim, x.dim());
  const Tensor in = dtype ? x.to(*dtype) : x;
  Tensor out;
  {
    NoGradGuard no_grad;
    out = softmax_forward(op, in, d);
  }
  if (Node* n = autograd::record(op == OpKind::Softmax ? GradRule::Softmax : GradRule::LogSoftmax, out, {in})) {
    n->save(out);
    n->ints = {d};
  }
  return out;
}

void check_same_dtype(const Tensor& x, const Tensor& t) {
  if (!t.defined()) return;
  EMBER_ENFORCE(t.dtype() == x.dtype(), Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(t.dtype()));
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Softmax, {x})) return softmax(c[0], dim);
  }
  return softmax_impl(OpKind::Softmax, x, dim, dtype);
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::LogSoftmax, {x})) return log_softmax(c[0], dim);
  }
  return softmax_impl(OpKind::LogSoftmax, x, dim, dtype);
}

Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (amp::Cast c = amp::autocast(amp::Op::LayerNorm, {x, weight, bias})) {
    return layer_norm(c[0], normalized_shape, c[1], c[2], eps);
  }
  const Shape ns(normalized_shape.begin(), normalized_shape.end());
  EMBER_ENFORCE(!ns.empty(), Status::InvalidArgument,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
              "element, but got normalized_shape = ",
              shape_str(ns));
  EMBER_ENFORCE(!weight.defined() || weight.sizes() == ns, Status::ShapeMismatch,
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
              shape_str(weight.defined() ? weight.sizes() : Shape{}), " and normalized_shape = ", shape_str(ns));
  EMBER_ENFORCE(!bias.defined() || bias.sizes() == ns, Status::ShapeMismatch,
              "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
              shape_str(bias.defined() ? bias.sizes() : Shape{}), " and normalized_shape = ", shape_str(ns));
  const int64_t nr = static_cast<int64_t>(ns.size());
  bool match = x.dim() >= nr;
  for (int64_t i = 0; match && i < nr; ++i) match = x.size(x.dim() - nr + i) == ns[static_cast<size_t>(i)];
  if (!match) {
    std::string expected = "[*";
    for (int64_t s : ns) expected += str_cat(", ", s);
    raise_error(Status::ShapeMismatch, str_cat("Given normalized_shape=", shape_str(ns), ", expected input with shape ",
                                         expected, "], but got input of size", shape_str(x.sizes())));
  }
  EMBER_ENFORCE(x.is_floating_point(), Status::NotSupported, "\"LayerNormKernelImpl\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  check_same_dtype(x, weight);
  check_same_dtype(x, bias);
  EMBER_ENFORCE(x.dim() <= kMaxRank, Status::NotSupported, "layer_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  unwrap(check_same_device({x, weight, bias}));
  Tensor out = empty_like(x);
  if (x.numel() > 0) {
    NormParams params;
    params.eps = eps;
    params.normalized_rank = static_cast<int>(nr);
    unwrap(run_kernel(OpKind::LayerNorm, {x, weight, bias}, {out}, params));
  }
  if (Node* n = autograd::record(GradRule::LayerNorm, out, {x, weight, bias})) {
    n->save(x).save(weight);
    n->ints = {nr};
    n->reals = {eps};
  }
  return out;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, double eps) {
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 0;
  EMBER_ENFORCE(running_mean.defined(), Status::InvalidArgument, "running_mean must be defined in evaluation mode");
  EMBER_ENFORCE(running_var.defined(), Status::InvalidArgument, "running_var must be defined in evaluation mode");
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &running_mean}, {"running_var", &running_var}, {"weight", &weight}, {"bias", &bias}};
  for (const auto& [name, t] : params) {
    if (!t->defined()) continue;
    EMBER_ENFORCE(t->numel() == channels, Status::ShapeMismatch, name, " should contain ", channels,
                " elements not ", t->numel());
  }
  // PyTorch's mixed-dtype rule: parameters share the input's dtype, or are all
  // float32 for a 16-bit floating input (ember also accepts float16 there).
  const Tensor* first = nullptr;
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) {
    if (t->defined() && first == nullptr) first = t;
  }
  if (first->dtype() != x.dtype()) {
    for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) {
      EMBER_ENFORCE(!t->defined() || t->dtype() == DType::Float32, Status::DTypeMismatch,
                  "mixed dtype (CPU): expect parameter to have scalar type of Float");
    }
    EMBER_ENFORCE(x.dtype() == DType::BFloat16 || x.dtype() == DType::Float16, Status::DTypeMismatch,
                "mixed dtype (CPU): expect input to have scalar type of BFloat16");
  } else {
    EMBER_ENFORCE(x.is_floating_point(), Status::NotSupported, "\"batch_norm\" not implemented for '",
                dtype_legacy_name(x.dtype()), "'");
    for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) check_same_dtype(x, *t);
  }
  EMBER_ENFORCE(x.dim() <= kMaxRank, Status::NotSupported, "batch_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  unwrap(check_same_device({x, running_mean, running_var, weight, bias}));
  Tensor out = empty_like(x);
  if (x.numel() > 0) {
    NoGradGuard no_grad;
    auto flat = [&](const Tensor& t) { return t.defined() ? t.reshape({channels}) : t; };
    NormParams p;
    p.eps = eps;
    unwrap(run_kernel(OpKind::BatchNorm, {x, flat(running_mean), flat(running_var), flat(weight), flat(bias)}, {out}, p));
  }
  if (Node* n = autograd::record(GradRule::BatchNorm, out, {x, running_mean, running_var, weight, bias})) {
    n->save(x).save(running_mean).save(running_var).save(weight);
    n->reals = {eps};
  }
  return out;
}

Tensor batch_norm_train(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight,
                        const Tensor& bias, double momentum, double eps) {
  EMBER_ENFORCE(x.dim() >= 2, Status::InvalidArgument, "batch_norm: expected a 2-D or higher input, got ",
              shape_str(x.sizes()));
  const int64_t channels = x.size(1);
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &running_mean}, {"running_var", &running_var}, {"weight", &weight}, {"bias", &bias}};
  for (const auto& [name, t] : params) {
    if (!t->defined()) continue;
    EMBER_ENFORCE(t->numel() == channels, Status::ShapeMismatch, name, " should contain ", channels,
                " elements not ", t->numel());
  }
  const int64_t count = x.numel() / std::max<int64_t>(channels, 1);
  if (count <= 1) {  // F.batch_norm's _verify_batch_size
    std::string sizes;
    for (int64_t d = 0; d < x.dim(); ++d) sizes += str_cat(d ? ", " : "", x.size(d));
    raise_error(Status::InvalidArgument, str_cat("Expected more than 1 value per channel when training, got input "
                                                 "size torch.Size([", sizes, "])"));
  }
  EMBER_ENFORCE(x.is_floating_point(), Status::NotSupported, "\"batch_norm\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  for (const Tensor* t : {&weight, &bias}) {
    EMBER_ENFORCE(!t->defined() || t->is_floating_point(), Status::DTypeMismatch, "expected scalar type ",
                dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(t->dtype()));
  }
  unwrap(check_same_device({x, running_mean, running_var, weight, bias}));
  // Composed from differentiable ops (16-bit inputs compute in float32).
  const bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  const Tensor xc = half ? x.to(DType::Float32) : x;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  Shape bshape(static_cast<size_t>(x.dim()), 1);
  bshape[1] = channels;
  const Tensor mu = mean(xc, dims, /*keepdim=*/true);
  const Tensor var_b = var(xc, dims, /*correction=*/0, /*keepdim=*/true);
  Tensor out = (xc - mu) * rsqrt(var_b + eps);
  if (weight.defined()) out = out * weight.reshape(bshape).to(out.dtype());
  if (bias.defined()) out = out + bias.reshape(bshape).to(out.dtype());
  if (half) out = out.to(x.dtype());
  {
    NoGradGuard no_grad;
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    if (running_mean.defined()) {
      const Tensor m = mu.reshape(running_mean.sizes()).to(running_mean.dtype());
      running_mean.copy_(running_mean * (1 - momentum) + m * momentum);
    }
    if (running_var.defined()) {
      const Tensor v = (var_b * unbias).reshape(running_var.sizes()).to(running_var.dtype());
      running_var.copy_(running_var * (1 - momentum) + v * momentum);
    }
  }
  return out;
}

}  // namespace ember
