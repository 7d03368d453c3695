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

Result<Tensor> softmax_forward(OpKind op, const Tensor& in, int64_t d) {
  EMBER_CHECK(in.dim() <= kMaxRank, Status::NotSupported, "softmax supports up to ", kMaxRank,
              " dimensions, got ", in.dim());
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(in));
  if (in.numel() == 0) return out;  // PyTorch returns before its dtype dispatch
  const bool last = in.dim() == 0 || d == in.dim() - 1;
  EMBER_CHECK(in.is_floating_point(), Status::NotSupported, "\"",
              last ? (op == OpKind::Softmax ? "softmax_lastdim_kernel_impl" : "log_softmax_lastdim_kernel_impl")
                   : "softmax_kernel_impl",
              "\" not implemented for '", dtype_legacy_name(in.dtype()), "'");
  SoftmaxParams params;
  params.dim = static_cast<int>(d);
  EMBER_TRY(run_kernel(op, {in}, {out}, params));
  return out;
}

// The conversion to `dtype` is recorded (ToCopyBackward0) before the op, as in PyTorch.
Result<Tensor> softmax_impl(OpKind op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, x.dim()));
  Tensor in = x;
  if (dtype) {
    EMBER_ASSIGN_OR_RETURN(in, core::to(x, *dtype));
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(out, softmax_forward(op, in, d));
  }
  if (Node* n = autograd::record(op == OpKind::Softmax ? GradRule::Softmax : GradRule::LogSoftmax, out, {in})) {
    n->save(out);
    n->ints = {d};
  }
  return out;
}

Status check_same_dtype(const Tensor& x, const Tensor& t) {
  if (!t.defined()) return Status::Ok;
  EMBER_CHECK(t.dtype() == x.dtype(), Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(t.dtype()));
  return Status::Ok;
}

// running_mean, running_var, weight and bias, when defined, hold one value per channel.
Status check_channel_params(int64_t channels, const Tensor& running_mean, const Tensor& running_var,
                            const Tensor& weight, const Tensor& bias) {
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &running_mean}, {"running_var", &running_var}, {"weight", &weight}, {"bias", &bias}};
  for (const auto& [name, t] : params) {
    if (!t->defined()) continue;
    EMBER_CHECK(t->numel() == channels, Status::ShapeMismatch, name, " should contain ", channels,
                " elements not ", t->numel());
  }
  return Status::Ok;
}

// stat <- stat * (1 - momentum) + batch * momentum, batch viewed as stat and in
// stat's dtype (a running statistic's update; the caller turns grad mode off).
Status update_running(const Tensor& stat, const Tensor& batch, double momentum) {
  EMBER_ASSIGN_OR_RETURN(Tensor b, core::reshape(batch, stat.sizes()));
  EMBER_ASSIGN_OR_RETURN(b, core::to(b, stat.dtype()));
  // The products in the order GCC evaluated the operands of `+`: right to left.
  EMBER_ASSIGN_OR_RETURN(const Tensor added, core::mul(b, momentum));
  EMBER_ASSIGN_OR_RETURN(const Tensor kept, core::mul(stat, 1 - momentum));
  EMBER_ASSIGN_OR_RETURN(const Tensor updated, core::add(kept, added));
  return core::copy_(stat, updated);
}

}  // namespace

Result<Tensor> core::softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Softmax, {x})) return core::softmax(c[0], dim);
  }
  return softmax_impl(OpKind::Softmax, x, dim, dtype);
}

Result<Tensor> core::log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::LogSoftmax, {x})) return core::log_softmax(c[0], dim);
  }
  return softmax_impl(OpKind::LogSoftmax, x, dim, dtype);
}

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return unwrap(core::softmax(x, dim, dtype));
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return unwrap(core::log_softmax(x, dim, dtype));
}

Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }

Result<Tensor> core::layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                                const Tensor& bias, double eps) {
  if (amp::Cast c = amp::autocast(amp::Op::LayerNorm, {x, weight, bias})) {
    return core::layer_norm(c[0], normalized_shape, c[1], c[2], eps);
  }
  const Shape ns(normalized_shape.begin(), normalized_shape.end());
  EMBER_CHECK(!ns.empty(), Status::InvalidArgument,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
              "element, but got normalized_shape = ",
              shape_str(ns));
  EMBER_CHECK(!weight.defined() || weight.sizes() == ns, Status::ShapeMismatch,
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
              shape_str(weight.defined() ? weight.sizes() : Shape{}), " and normalized_shape = ", shape_str(ns));
  EMBER_CHECK(!bias.defined() || bias.sizes() == ns, Status::ShapeMismatch,
              "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
              shape_str(bias.defined() ? bias.sizes() : Shape{}), " and normalized_shape = ", shape_str(ns));
  const int64_t nr = static_cast<int64_t>(ns.size());
  bool match = x.dim() >= nr;
  for (int64_t i = 0; match && i < nr; ++i) match = x.size(x.dim() - nr + i) == ns[static_cast<size_t>(i)];
  if (!match) {
    std::string expected = "[*";
    for (int64_t s : ns) expected += str_cat(", ", s);
    return fail(Status::ShapeMismatch, "Given normalized_shape=", shape_str(ns), ", expected input with shape ",
                expected, "], but got input of size", shape_str(x.sizes()));
  }
  EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"LayerNormKernelImpl\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  EMBER_TRY(check_same_dtype(x, weight));
  EMBER_TRY(check_same_dtype(x, bias));
  EMBER_CHECK(x.dim() <= kMaxRank, Status::NotSupported, "layer_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  EMBER_TRY(check_same_device({x, weight, bias}));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(x));
  if (x.numel() > 0) {
    NormParams params;
    params.eps = eps;
    params.normalized_rank = static_cast<int>(nr);
    EMBER_TRY(run_kernel(OpKind::LayerNorm, {x, weight, bias}, {out}, params));
  }
  if (Node* n = autograd::record(GradRule::LayerNorm, out, {x, weight, bias})) {
    n->save(x).save(weight);
    n->ints = {nr};
    n->reals = {eps};
  }
  return out;
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  return unwrap(core::layer_norm(x, normalized_shape, weight, bias, eps));
}

Result<Tensor> core::batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 0;
  EMBER_CHECK(running_mean.defined(), Status::InvalidArgument, "running_mean must be defined in evaluation mode");
  EMBER_CHECK(running_var.defined(), Status::InvalidArgument, "running_var must be defined in evaluation mode");
  EMBER_TRY(check_channel_params(channels, running_mean, running_var, weight, bias));
  // PyTorch's mixed-dtype rule: parameters share the input's dtype, or are all
  // float32 for a 16-bit floating input (ember also accepts float16 there).
  const Tensor* first = nullptr;
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) {
    if (t->defined() && first == nullptr) first = t;
  }
  if (first->dtype() != x.dtype()) {
    for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) {
      EMBER_CHECK(!t->defined() || t->dtype() == DType::Float32, Status::DTypeMismatch,
                  "mixed dtype (CPU): expect parameter to have scalar type of Float");
    }
    EMBER_CHECK(x.dtype() == DType::BFloat16 || x.dtype() == DType::Float16, Status::DTypeMismatch,
                "mixed dtype (CPU): expect input to have scalar type of BFloat16");
  } else {
    EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"batch_norm\" not implemented for '",
                dtype_legacy_name(x.dtype()), "'");
    for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) EMBER_TRY(check_same_dtype(x, *t));
  }
  EMBER_CHECK(x.dim() <= kMaxRank, Status::NotSupported, "batch_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  EMBER_TRY(check_same_device({x, running_mean, running_var, weight, bias}));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(x));
  if (x.numel() > 0) {
    NoGradGuard no_grad;
    // The parameters flattened to [channels] (undefined ones stay undefined).
    Tensor flat[] = {running_mean, running_var, weight, bias};
    for (Tensor& t : flat) {
      if (t.defined()) {
        EMBER_ASSIGN_OR_RETURN(t, core::reshape(t, {channels}));
      }
    }
    NormParams p;
    p.eps = eps;
    EMBER_TRY(run_kernel(OpKind::BatchNorm, {x, flat[0], flat[1], flat[2], flat[3]}, {out}, p));
  }
  if (Node* n = autograd::record(GradRule::BatchNorm, out, {x, running_mean, running_var, weight, bias})) {
    n->save(x).save(running_mean).save(running_var).save(weight);
    n->reals = {eps};
  }
  return out;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return unwrap(core::batch_norm(x, running_mean, running_var, weight, bias, eps));
}

Result<Tensor> core::batch_norm_train(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight,
                                      const Tensor& bias, double momentum, double eps) {
  EMBER_CHECK(x.dim() >= 2, Status::InvalidArgument, "batch_norm: expected a 2-D or higher input, got ",
              shape_str(x.sizes()));
  const int64_t channels = x.size(1);
  EMBER_TRY(check_channel_params(channels, running_mean, running_var, weight, bias));
  const int64_t count = x.numel() / std::max<int64_t>(channels, 1);
  if (count <= 1) {  // F.batch_norm's _verify_batch_size
    std::string sizes;
    for (int64_t d = 0; d < x.dim(); ++d) sizes += str_cat(d ? ", " : "", x.size(d));
    return fail(Status::InvalidArgument, "Expected more than 1 value per channel when training, got input "
                                         "size torch.Size([", sizes, "])");
  }
  EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"batch_norm\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  for (const Tensor* t : {&weight, &bias}) {
    EMBER_CHECK(!t->defined() || t->is_floating_point(), Status::DTypeMismatch, "expected scalar type ",
                dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(t->dtype()));
  }
  EMBER_TRY(check_same_device({x, running_mean, running_var, weight, bias}));
  // Composed from differentiable ops (16-bit inputs compute in float32).
  const bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Tensor xc = x;
  if (half) {
    EMBER_ASSIGN_OR_RETURN(xc, core::to(x, DType::Float32));
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  Shape bshape(static_cast<size_t>(x.dim()), 1);
  bshape[1] = channels;
  EMBER_ASSIGN_OR_RETURN(const Tensor mu, core::mean(xc, dims, /*keepdim=*/true));
  EMBER_ASSIGN_OR_RETURN(const Tensor var_b, core::var(xc, dims, /*correction=*/0, /*keepdim=*/true));
  // out = (xc - mu) * rsqrt(var_b + eps), its nodes made in the order they were
  // (GCC evaluated the operands right to left).
  EMBER_ASSIGN_OR_RETURN(const Tensor var_eps, core::add(var_b, eps));
  EMBER_ASSIGN_OR_RETURN(const Tensor inv_std, core::rsqrt(var_eps));
  EMBER_ASSIGN_OR_RETURN(const Tensor centered, core::sub(xc, mu));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::mul(centered, inv_std));
  if (weight.defined()) {
    EMBER_ASSIGN_OR_RETURN(Tensor w, core::reshape(weight, bshape));
    EMBER_ASSIGN_OR_RETURN(w, core::to(w, out.dtype()));
    EMBER_ASSIGN_OR_RETURN(out, core::mul(out, w));
  }
  if (bias.defined()) {
    EMBER_ASSIGN_OR_RETURN(Tensor b, core::reshape(bias, bshape));
    EMBER_ASSIGN_OR_RETURN(b, core::to(b, out.dtype()));
    EMBER_ASSIGN_OR_RETURN(out, core::add(out, b));
  }
  if (half) {
    EMBER_ASSIGN_OR_RETURN(out, core::to(out, x.dtype()));
  }
  {
    NoGradGuard no_grad;
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    if (running_mean.defined()) {
      EMBER_TRY(update_running(running_mean, mu, momentum));
    }
    if (running_var.defined()) {
      EMBER_ASSIGN_OR_RETURN(const Tensor unbiased, core::mul(var_b, unbias));
      EMBER_TRY(update_running(running_var, unbiased, momentum));
    }
  }
  return out;
}

Tensor batch_norm_train(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight,
                        const Tensor& bias, double momentum, double eps) {
  return unwrap(core::batch_norm_train(x, std::move(running_mean), std::move(running_var), weight, bias, momentum,
                                       eps));
}

}  // namespace ember
