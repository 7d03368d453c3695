// Softmax, log_softmax, layer_norm and batch_norm (inference form) front-ends:
// PyTorch's argument checks and messages, output allocation, dispatch.
#include <optional>

#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

Tensor softmax_impl(OpKind op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const int64_t d = wrap_dim(dim, x.dim());
  const Tensor in = dtype ? x.to(*dtype) : x;
  EMBER_CHECK(in.dim() <= kMaxRank, Status::NotSupported, "softmax supports up to ", kMaxRank,
              " dimensions, got ", in.dim());
  Tensor out = empty_like(in);
  if (in.numel() == 0) return out;  // PyTorch returns before its dtype dispatch
  const bool last = in.dim() == 0 || d == in.dim() - 1;
  EMBER_CHECK(in.is_floating_point(), Status::NotSupported, "\"",
              last ? (op == OpKind::Softmax ? "softmax_lastdim_kernel_impl" : "log_softmax_lastdim_kernel_impl")
                   : "softmax_kernel_impl",
              "\" not implemented for '", dtype_legacy_name(in.dtype()), "'");
  SoftmaxParams params;
  params.dim = static_cast<int>(d);
  run_kernel(op, {in}, {out}, params);
  return out;
}

void check_same_dtype(const Tensor& x, const Tensor& t) {
  if (!t.defined()) return;
  EMBER_CHECK(t.dtype() == x.dtype(), Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(t.dtype()));
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(OpKind::Softmax, x, dim, dtype);
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl(OpKind::LogSoftmax, x, dim, dtype);
}

Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
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
    raise_error(Status::ShapeMismatch, str_cat("Given normalized_shape=", shape_str(ns), ", expected input with shape ",
                                         expected, "], but got input of size", shape_str(x.sizes())));
  }
  EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"LayerNormKernelImpl\" not implemented for '",
              dtype_legacy_name(x.dtype()), "'");
  check_same_dtype(x, weight);
  check_same_dtype(x, bias);
  EMBER_CHECK(x.dim() <= kMaxRank, Status::NotSupported, "layer_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  check_same_device({x, weight, bias});
  Tensor out = empty_like(x);
  if (x.numel() == 0) return out;
  NormParams params;
  params.eps = eps;
  params.normalized_rank = static_cast<int>(nr);
  run_kernel(OpKind::LayerNorm, {x, weight, bias}, {out}, params);
  return out;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, double eps) {
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 0;
  EMBER_CHECK(running_mean.defined(), Status::InvalidArgument, "running_mean must be defined in evaluation mode");
  EMBER_CHECK(running_var.defined(), Status::InvalidArgument, "running_var must be defined in evaluation mode");
  const std::pair<const char*, const Tensor*> params[] = {
      {"running_mean", &running_mean}, {"running_var", &running_var}, {"weight", &weight}, {"bias", &bias}};
  for (const auto& [name, t] : params) {
    if (!t->defined()) continue;
    EMBER_CHECK(t->numel() == channels, Status::ShapeMismatch, name, " should contain ", channels,
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
      EMBER_CHECK(!t->defined() || t->dtype() == DType::Float32, Status::DTypeMismatch,
                  "mixed dtype (CPU): expect parameter to have scalar type of Float");
    }
    EMBER_CHECK(x.dtype() == DType::BFloat16 || x.dtype() == DType::Float16, Status::DTypeMismatch,
                "mixed dtype (CPU): expect input to have scalar type of BFloat16");
  } else {
    EMBER_CHECK(x.is_floating_point(), Status::NotSupported, "\"batch_norm\" not implemented for '",
                dtype_legacy_name(x.dtype()), "'");
    for (const Tensor* t : {&weight, &bias, &running_mean, &running_var}) check_same_dtype(x, *t);
  }
  EMBER_CHECK(x.dim() <= kMaxRank, Status::NotSupported, "batch_norm supports up to ", kMaxRank,
              " dimensions, got ", x.dim());
  check_same_device({x, running_mean, running_var, weight, bias});
  Tensor out = empty_like(x);
  if (x.numel() == 0) return out;
  auto flat = [&](const Tensor& t) { return t.defined() ? t.reshape({channels}) : t; };
  NormParams p;
  p.eps = eps;
  run_kernel(OpKind::BatchNorm, {x, flat(running_mean), flat(running_var), flat(weight), flat(bias)}, {out}, p);
  return out;
}

}  // namespace ember
