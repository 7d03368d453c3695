// Front-ends of the nn ops' backward kernels (PyTorch's max_pool2d_backward,
// avg_pool2d_backward, _adaptive_avg_pool2d_backward, embedding_backward and
// the padding backwards): the autograd rules (runtime/autograd/grad_rules_nn.cc)
// call them. Each allocates a zeroed gradient in the input's layout and runs
// the accumulating kernel.
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

// A single value or a pair (PyTorch's int-or-tuple arguments).
int64_t pick(IntArrayRef v, int i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v[v.size() == 1 ? 0 : static_cast<size_t>(i)];
}

Result<Pool2dParams> pool_params(IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                 IntArrayRef dilation, bool ceil_mode) {
  EMBER_CHECK(!kernel_size.empty() && kernel_size.size() <= 2 && stride.size() <= 2 && padding.size() <= 2 &&
                  dilation.size() <= 2,
              Status::InvalidArgument, "pool2d backward: expected one or two values per argument");
  Pool2dParams p;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = pick(kernel_size, i, 1);
    p.stride[i] = pick(stride, i, p.kernel[i]);
    p.padding[i] = pick(padding, i, 0);
    p.dilation[i] = pick(dilation, i, 1);
  }
  p.ceil_mode = ceil_mode;
  return p;
}


// Runs a pooling backward kernel on 4-D views of grad and x (3-D: unbatched).
Result<Tensor> pool_backward(OpKind op, const Tensor& grad, const Tensor& x, const Pool2dParams& p, bool pass_input) {
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, Status::InvalidArgument,
              "pool2d backward: expected a 3-D or 4-D input, got ", shape_str(x.sizes()));
  EMBER_CHECK(grad.dim() == x.dim() && grad.size(-3) == x.size(-3) && (x.dim() == 3 || grad.size(0) == x.size(0)),
              Status::ShapeMismatch, "pool2d backward: gradient of shape ", shape_str(grad.sizes()),
              " does not fit input of shape ", shape_str(x.sizes()));
  EMBER_CHECK(grad.dtype() == x.dtype(), Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(x.dtype()), " but found ", dtype_legacy_name(grad.dtype()));
  const bool batched = x.dim() == 4;
  Tensor in = x, g = grad;
  if (!batched) {
    EMBER_ASSIGN_OR_RETURN(in, core::unsqueeze(x, 0));
    EMBER_ASSIGN_OR_RETURN(g, core::unsqueeze(grad, 0));
  }
  EMBER_ASSIGN_OR_RETURN(Tensor grad_in, core::full_like(in, 0));
  if (g.numel() > 0) {
    if (pass_input) {
      EMBER_TRY(run_kernel(op, {g, in}, {grad_in}, p));
    } else {
      EMBER_TRY(run_kernel(op, {g}, {grad_in}, p));
    }
  }
  if (batched) return grad_in;
  return core::squeeze(grad_in, 0);
}

}  // namespace

Result<Tensor> core::max_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size,
                                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                         bool ceil_mode) {
  EMBER_ASSIGN_OR_RETURN(const Pool2dParams p, pool_params(kernel_size, stride, padding, dilation, ceil_mode));
  return pool_backward(OpKind::MaxPool2dBackward, grad, x, p, /*pass_input=*/true);
}

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return unwrap(core::max_pool2d_backward(grad, x, kernel_size, stride, padding, dilation, ceil_mode));
}

Result<Tensor> core::avg_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size,
                                         IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  EMBER_ASSIGN_OR_RETURN(Pool2dParams p, pool_params(kernel_size, stride, padding, {}, ceil_mode));
  p.count_include_pad = count_include_pad;
  p.divisor_override = divisor_override.value_or(0);
  return pool_backward(OpKind::AvgPool2dBackward, grad, x, p, /*pass_input=*/false);
}

Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  return unwrap(core::avg_pool2d_backward(grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                          divisor_override));
}

Result<Tensor> core::adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x) {
  return pool_backward(OpKind::AdaptiveAvgPool2dBackward, grad, x, Pool2dParams{}, /*pass_input=*/false);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x) {
  return unwrap(core::adaptive_avg_pool2d_backward(grad, x));
}

Result<Tensor> core::embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "embedding_backward: indices must be Long or Int, got ", dtype_legacy_name(indices.dtype()));
  bool fits = grad.dim() == indices.dim() + 1;
  for (int64_t d = 0; fits && d < indices.dim(); ++d) fits = grad.size(d) == indices.size(d);
  EMBER_CHECK(fits, Status::ShapeMismatch, "embedding_backward: gradient of shape ", shape_str(grad.sizes()),
              " does not fit indices of shape ", shape_str(indices.sizes()));
  EMBER_TRY(check_same_device({grad, indices}));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::zeros({num_weights, grad.size(-1)},
                                              TensorOptions(grad.dtype()).device(grad.device())));
  if (grad.numel() > 0) EMBER_TRY(run_kernel(OpKind::EmbeddingBackward, {grad, indices}, {out}));
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  return unwrap(core::embedding_backward(grad, indices, num_weights));
}

Result<Tensor> core::pad_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef pad,
                                  std::string_view mode) {
  PadParams params;
  if (mode == "constant") {
    params.mode = PadMode::Constant;
  } else if (mode == "reflect") {
    params.mode = PadMode::Reflect;
  } else if (mode == "replicate") {
    params.mode = PadMode::Replicate;
  } else if (mode == "circular") {
    params.mode = PadMode::Circular;
  } else {
    return fail(Status::InvalidArgument, "Unrecognised padding mode ", mode);
  }
  const int64_t rank = static_cast<int64_t>(input_sizes.size());
  EMBER_CHECK(pad.size() % 2 == 0 && static_cast<int64_t>(pad.size()) <= 2 * rank && grad.dim() == rank,
              Status::InvalidArgument, "pad_backward: bad padding ", shape_str(pad), " for input of shape ",
              shape_str(input_sizes));
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = rank - 1 - static_cast<int64_t>(i);
    params.before[d] = pad[2 * i];
    params.after[d] = pad[2 * i + 1];
  }
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::zeros(input_sizes, TensorOptions(grad.dtype()).device(grad.device())));
  EMBER_TRY(run_kernel(OpKind::PadBackward, {grad}, {out}, params));
  return out;
}

Tensor pad_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef pad, std::string_view mode) {
  return unwrap(core::pad_backward(grad, input_sizes, pad, mode));
}

}  // namespace ember
