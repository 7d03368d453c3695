// conv2d front-end: PyTorch 1.13's argument checks and messages (in its
// order), unbatched [C, H, W] input, and the output memory format (channels_last
// when the input or the weight is laid out channels_last, as PyTorch suggests).
#include <string>
#include <vector>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/qlinear.h"

namespace ember {
namespace {

// The C++ type name PyTorch prints in "Input type (float) and bias type ...".
const char* cpp_type_name(DType d) {
  switch (d) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Int64: return "long int";
    case DType::Int32: return "int";
    case DType::Int16: return "short int";
    case DType::Int8: return "signed char";
    case DType::UInt8: return "unsigned char";
    case DType::UInt16: return "unsigned short";
    case DType::UInt32: return "unsigned int";
    case DType::UInt64: return "unsigned long";
    case DType::Bool: return "bool";
    default: break;  // the storage-only types: never a conv's dtype
  }
  return "unknown";
}

// A single value or one per spatial dim (PyTorch's expand_param_if_needed).
Result<std::vector<int64_t>> expand_param(IntArrayRef param, const char* name, int64_t expected) {
  if (param.size() == 1) return std::vector<int64_t>(static_cast<size_t>(expected), param[0]);
  EMBER_CHECK(static_cast<int64_t>(param.size()) == expected, Status::InvalidArgument, "expected ", name,
              " to be a single integer value or a list of ", expected,
              " values to match the convolution dimensions, but got ", name, "=", shape_str(param));
  return std::vector<int64_t>(param.begin(), param.end());
}

// conv2d; `act` and `residual` (when defined) are passed to the kernel (which
// then adds the residual and applies the activation) when *fuse, which stays
// true only when they were (the residual has the output's shape and dtype).
Result<Tensor> conv2d_impl(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef dilation, int64_t groups, const Activation& act, bool* fuse,
                           const PreparedWeight* packed = nullptr, const Tensor& residual = Tensor(),
                           MemoryFormat out_format = MemoryFormat::Preserve) {
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, Status::InvalidArgument,
              "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: ", shape_str(x.sizes()));
  const bool batched = x.dim() == 4;
  Tensor input = x;
  if (!batched) {
    EMBER_ASSIGN_OR_RETURN(input, core::unsqueeze(x, 0));
  }
  EMBER_CHECK(weight.dim() >= 3, Status::InvalidArgument, "weight should have at least three dimensions");
  EMBER_CHECK(groups > 0, Status::InvalidArgument, "non-positive groups is not supported");
  const int64_t dims = weight.dim() - 2;
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> st, expand_param(stride, "stride", dims));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> pad, expand_param(padding, "padding", dims));
  EMBER_ASSIGN_OR_RETURN(const std::vector<int64_t> dil, expand_param(dilation, "dilation", dims));
  for (int64_t v : pad) EMBER_CHECK(v >= 0, Status::InvalidArgument, "negative padding is not supported");
  for (int64_t v : st) EMBER_CHECK(v > 0, Status::InvalidArgument, "non-positive stride is not supported");
  for (int64_t v : dil) {
    EMBER_CHECK(v > 0, Status::InvalidArgument, "dilation should be greater than zero, but got ", shape_str(dil));
  }
  EMBER_CHECK(!bias.defined() || bias.dtype() == input.dtype(), Status::DTypeMismatch, "Input type (",
              cpp_type_name(input.dtype()), ") and bias type (", cpp_type_name(bias.dtype()), ") should be the same");
  const Shape& ws = weight.sizes();
  EMBER_CHECK(weight.dim() == input.dim(), Status::ShapeMismatch, "Expected ", weight.dim(), "-dimensional input for ",
              weight.dim(), "-dimensional weight ", shape_str(ws), ", but got ", input.dim(),
              "-dimensional input of size ", shape_str(input.sizes()), " instead");
  EMBER_CHECK(ws[0] >= groups, Status::ShapeMismatch, "Given groups=", groups, ", expected weight to be at least ",
              groups, " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  EMBER_CHECK(ws[0] % groups == 0, Status::ShapeMismatch, "Given groups=", groups,
              ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size [",
              shape_str(ws), "] instead");
  EMBER_CHECK(input.size(1) == ws[1] * groups, Status::ShapeMismatch, "Given groups=", groups, ", weight of size ",
              shape_str(ws), ", expected input", shape_str(input.sizes()), " to have ", ws[1] * groups,
              " channels, but got ", input.size(1), " channels instead");
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == ws[0]), Status::ShapeMismatch,
              "Given weight of size ", shape_str(ws), ", expected bias to be 1-dimensional with ", ws[0],
              " elements, but got bias of size ", shape_str(bias.defined() ? bias.sizes() : Shape{}), " instead");
  int64_t out_hw[2];
  bool fits = true;
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = input.size(2 + i) + 2 * pad[i];
    const int64_t kernel = dil[i] * (ws[2 + i] - 1) + 1;
    fits = fits && padded >= kernel;
    out_hw[i] = (padded - kernel) / st[i] + 1;
  }
  EMBER_CHECK(fits, Status::ShapeMismatch, "Calculated padded input size per channel: (", input.size(2) + 2 * pad[0],
              " x ", input.size(3) + 2 * pad[1], "). Kernel size: (", dil[0] * (ws[2] - 1) + 1, " x ",
              dil[1] * (ws[3] - 1) + 1, "). Kernel size can't be greater than actual input size");
  EMBER_TRY(check_same_device({input, weight, bias}));
  const DType dtype = input.dtype();
  // No Half convolution on the CPU (as PyTorch 1.13); other devices' kernels
  // say themselves whether they have one.
  EMBER_CHECK(dtype != DType::Bool && (dtype != DType::Float16 || !input.device().is_cpu()), Status::NotSupported,
              "\"slow_conv2d_cpu\" not implemented for '", dtype_legacy_name(dtype), "'");
  EMBER_CHECK(weight.dtype() == dtype, Status::DTypeMismatch, "expected scalar type ", dtype_legacy_name(dtype),
              " but found ", dtype_legacy_name(weight.dtype()));

  const bool channels_last = input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                             weight.suggest_memory_format() == MemoryFormat::ChannelsLast;
  // PyTorch's empty-input path gives no output channels when the input has none.
  const int64_t out_channels = input.size(1) == 0 ? 0 : ws[0];
  const MemoryFormat format = out_format != MemoryFormat::Preserve ? out_format
                              : channels_last                      ? MemoryFormat::ChannelsLast
                                                                   : MemoryFormat::Contiguous;
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({input.size(0), out_channels, out_hw[0], out_hw[1]},
                                                  TensorOptions(dtype).device(input.device()), format));
  if (residual.defined() && (residual.sizes() != out.sizes() || residual.dtype() != dtype ||
                             residual.device() != out.device())) {
    *fuse = false;
  }
  if (out.numel() > 0) {
    Conv2dParams params;
    for (int i = 0; i < 2; ++i) {
      params.stride[i] = st[i];
      params.padding[i] = pad[i];
      params.dilation[i] = dil[i];
    }
    params.groups = groups;
    if (*fuse) params.activation = act;
    params.weight = packed;
    EMBER_ASSIGN_OR_RETURN(const Tensor weight_c, core::contiguous(weight.detach()));
    if (*fuse && residual.defined()) {
      EMBER_TRY(run_kernel(OpKind::Conv2d, {input, weight_c, bias, residual}, {out}, params));
    } else {
      EMBER_TRY(run_kernel(OpKind::Conv2d, {input, weight_c, bias}, {out}, params));
    }
  }
  if (Node* n = autograd::record(GradRule::Conv2d, out, {input, weight, bias})) {
    n->save(input).save(weight);
    n->ints = {st[0], st[1], pad[0], pad[1], dil[0], dil[1], groups};
  }
  if (batched) return out;
  return core::squeeze(out, 0);
}

}  // namespace

Result<Tensor> core::conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                            IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (amp::Cast c = amp::autocast(amp::Op::Conv2d, {x, weight, bias})) {
    return core::conv2d(c[0], c[1], c[2], stride, padding, dilation, groups);
  }
  bool fuse = false;
  return conv2d_impl(x, weight, bias, stride, padding, dilation, groups, Activation{}, &fuse);
}

Result<Tensor> core::conv2d_activated(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                                      bool* fused, const Tensor& residual, MemoryFormat out_format) {
  if (amp::Cast c = amp::autocast(amp::Op::Conv2d, {x, weight, bias})) {
    return core::conv2d_activated(c[0], c[1], c[2], p, fused, residual, out_format);
  }
  // The CPU float32 kernel (kernels/cpu/conv2d.cc) adds a residual and applies
  // Conv2dParams::activation; other kernels take neither, and autograd records
  // the plain convolution.
  *fused = (p.activation.kind != ActivationKind::None || residual.defined()) && x.device().is_cpu() &&
           x.dtype() == DType::Float32 && weight.dtype() == DType::Float32 &&
           !autograd::needs_grad({x, weight, bias, residual});
  return conv2d_impl(x, weight, bias, {p.stride[0], p.stride[1]}, {p.padding[0], p.padding[1]},
                     {p.dilation[0], p.dilation[1]}, p.groups, p.activation, fused, p.weight, residual, out_format);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return unwrap(core::conv2d(x, weight, bias, stride, padding, dilation, groups));
}

Tensor conv2d_activated(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p,
                        bool* fused, const Tensor& residual) {
  return unwrap(core::conv2d_activated(x, weight, bias, p, fused, residual));
}

}  // namespace ember
