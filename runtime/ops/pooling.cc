// 2-D pooling front-ends (max, average, adaptive average) and embedding's
// memory-format helper: argument checks with PyTorch 1.13's messages, output
// size, output memory format (channels_last in, channels_last out).
#include <string>

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

// floor division (PyTorch's div_rtn).
int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) --q;
  return q;
}

// pooling_output_shape: the last window must start inside the input or the left padding.
Result<int64_t> pool_output_size(int64_t input, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                                 bool ceil_mode) {
  EMBER_CHECK(stride != 0, Status::InvalidArgument, "stride should not be zero");
  EMBER_CHECK(pad >= 0, Status::InvalidArgument, "pad must be non-negative, but got pad: ", pad);
  EMBER_CHECK(pad <= kernel / 2, Status::InvalidArgument, "pad should be at most half of kernel size, but got pad=",
              pad, " and kernel_size=", kernel);
  int64_t out = div_floor(input + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= input + pad) --out;
  return out;
}

struct Pool2dArgs {
  Pool2dParams params;
  bool channels_last = false;
  bool batched = true;
  Shape out_shape;
};

// The argument handling shared by max_pool2d and avg_pool2d (PyTorch's
// pool2d_shape_check and its callers).
Result<Pool2dArgs> pool2d_args(const char* op, const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool is_max) {
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, Status::InvalidArgument, op,
              ": kernel_size must either be a single int, or a tuple of two ints");
  EMBER_CHECK(stride.size() <= 2, Status::InvalidArgument, op,
              ": stride must either be omitted, a single int, or a tuple of two ints");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2, Status::InvalidArgument, op,
              is_max ? ": padding must be either be a single int, or a tuple of two ints"
                     : ": padding must either be a single int, or a tuple of two ints");
  if (is_max) {
    EMBER_CHECK(dilation.size() == 1 || dilation.size() == 2, Status::InvalidArgument, op,
                ": dilation must be either a single int, or a tuple of two ints");
  }
  Pool2dArgs a;
  Pool2dParams& p = a.params;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = kernel_size[kernel_size.size() == 1 ? 0 : i];
    p.stride[i] = stride.empty() ? p.kernel[i] : stride[stride.size() == 1 ? 0 : i];
    p.padding[i] = padding[padding.size() == 1 ? 0 : i];
    p.dilation[i] = dilation[dilation.size() == 1 ? 0 : i];
  }
  p.ceil_mode = ceil_mode;
  a.channels_last = (x.suggest_memory_format() == MemoryFormat::ChannelsLast);
  if (a.channels_last) {
    EMBER_CHECK(x.dim() == 4, Status::InvalidArgument,
                "non-empty 4D (batch mode) tensor expected for input with channels_last layout");
  } else {
    EMBER_CHECK(x.dim() == 3 || x.dim() == 4, Status::InvalidArgument,
                "non-empty 3D or 4D (batch mode) tensor expected for input");
  }
  const int64_t rank = x.dim();
  const int64_t planes = x.size(-3), in_h = x.size(-2), in_w = x.size(-1);
  EMBER_ASSIGN_OR_RETURN(const int64_t out_h, pool_output_size(in_h, p.kernel[0], p.padding[0], p.stride[0],
                                                               p.dilation[0], ceil_mode));
  EMBER_ASSIGN_OR_RETURN(const int64_t out_w, pool_output_size(in_w, p.kernel[1], p.padding[1], p.stride[1],
                                                               p.dilation[1], ceil_mode));
  EMBER_CHECK(p.kernel[0] > 0 && p.kernel[1] > 0, Status::InvalidArgument,
              "kernel size should be greater than zero, but got kH: ", p.kernel[0], " kW: ", p.kernel[1]);
  EMBER_CHECK(p.stride[0] > 0 && p.stride[1] > 0, Status::InvalidArgument,
              "stride should be greater than zero, but got dH: ", p.stride[0], " dW: ", p.stride[1]);
  EMBER_CHECK(p.dilation[0] > 0 && p.dilation[1] > 0, Status::InvalidArgument,
              "dilation should be greater than zero, but got dilationH: ", p.dilation[0],
              " dilationW: ", p.dilation[1]);
  const bool valid_dims = x.size(1) != 0 && x.size(2) != 0;
  if (a.channels_last) {
    EMBER_CHECK(valid_dims && x.size(3) != 0, Status::InvalidArgument,
                "Expected 4D (batch mode) tensor expected for input with channels_last layout with optional 0 dim "
                "batch size for input, but got: ", shape_str(x.sizes()));
  } else {
    EMBER_CHECK((rank == 3 && x.size(0) != 0 && valid_dims) || (rank == 4 && valid_dims && x.size(3) != 0),
                Status::InvalidArgument,
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
                shape_str(x.sizes()));
  }
  EMBER_CHECK(p.kernel[1] / 2 >= p.padding[1] && p.kernel[0] / 2 >= p.padding[0], Status::InvalidArgument,
              "pad should be smaller than or equal to half of kernel size, but got padW = ", p.padding[1],
              ", padH = ", p.padding[0], ", kW = ", p.kernel[1], ", kH = ", p.kernel[0]);
  EMBER_CHECK(out_w >= 1 && out_h >= 1, Status::InvalidArgument, "Given input size: (", planes, "x", in_h, "x", in_w,
              "). Calculated output size: (", planes, "x", out_h, "x", out_w, "). Output size is too small");
  a.batched = rank == 4;
  a.out_shape = {a.batched ? x.size(0) : 1, planes, out_h, out_w};
  return a;
}

// PyTorch's CPU pooling kernels' dtype lists ("max_pool2d" not implemented for 'Half').
// Float16 is allowed on other devices (as PyTorch's CUDA kernels allow Half);
// the device's kernel table decides.
Status check_pool_dtype(const char* op, const Tensor& x, bool channels_last, bool allow_int64) {
  const DType t = x.dtype();
  const bool ok = t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16 ||
                  (allow_int64 && t == DType::Int64) || (t == DType::Float16 && !x.device().is_cpu());
  EMBER_CHECK(ok, Status::NotSupported, "\"", op, channels_last ? "_channels_last" : "", "\" not implemented for '",
              dtype_legacy_name(t), "'");
  return Status::Ok;
}

// x (3-D: unbatched) as the 4-D input the kernels take.
Result<Tensor> batched_input(const Tensor& x, bool batched) {
  if (batched) return x;
  return core::unsqueeze(x, 0);
}

// The kernel's 4-D output, unbatched again for a 3-D input.
Result<Tensor> unbatched_output(const Tensor& out, bool batched) {
  if (batched) return out;
  return core::squeeze(out, 0);
}

Result<Tensor> run_pool(OpKind op, const Tensor& x, const Pool2dArgs& a) {
  Tensor result;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor in, batched_input(x, a.batched));
    EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(a.out_shape, TensorOptions(x.dtype()).device(x.device()),
                                                   a.channels_last ? MemoryFormat::ChannelsLast
                                                                   : MemoryFormat::Contiguous));
    if (out.numel() > 0) EMBER_TRY(run_kernel(op, {in}, {out}, a.params));
    EMBER_ASSIGN_OR_RETURN(result, unbatched_output(out, a.batched));
  }
  if (Node* n = autograd::record(op == OpKind::MaxPool2d ? GradRule::MaxPool2d : GradRule::AvgPool2d, result, {x})) {
    n->save(x);
    n->params = a.params;
  }
  return result;
}

}  // namespace

Result<Tensor> core::max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                IntArrayRef dilation, bool ceil_mode) {
  EMBER_ASSIGN_OR_RETURN(const Pool2dArgs a, pool2d_args("max_pool2d", x, kernel_size, stride, padding, dilation,
                                                         ceil_mode, true));
  EMBER_TRY(check_pool_dtype("max_pool2d", x, a.channels_last, /*allow_int64=*/false));
  return run_pool(OpKind::MaxPool2d, x, a);
}

Tensor max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return unwrap(core::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode));
}

Result<Tensor> core::max_pool2d_indices(const Tensor& x, const Pool2dParams& p) {
  EMBER_ASSIGN_OR_RETURN(const Pool2dArgs a,
                         pool2d_args("max_pool2d_with_indices", x, IntArrayRef(p.kernel, 2), IntArrayRef(p.stride, 2),
                                     IntArrayRef(p.padding, 2), IntArrayRef(p.dilation, 2), p.ceil_mode, true));
  EMBER_TRY(check_pool_dtype("max_pool2d_with_indices", x, a.channels_last, /*allow_int64=*/false));
  EMBER_ASSIGN_OR_RETURN(const Tensor in, batched_input(x, a.batched));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(a.out_shape, TensorOptions(DType::Int64).device(x.device())));
  if (out.numel() > 0) EMBER_TRY(run_kernel(OpKind::MaxPool2dIndices, {in}, {out}, a.params));
  return unbatched_output(out, a.batched);
}

Tensor max_pool2d_indices(const Tensor& x, const Pool2dParams& p) { return unwrap(core::max_pool2d_indices(x, p)); }

Result<std::pair<Tensor, Tensor>> core::max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel_size,
                                                                IntArrayRef stride, IntArrayRef padding,
                                                                IntArrayRef dilation, bool ceil_mode) {
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode));
  EMBER_ASSIGN_OR_RETURN(const Pool2dArgs a, pool2d_args("max_pool2d_with_indices", x, kernel_size, stride, padding,
                                                         dilation, ceil_mode, true));
  EMBER_ASSIGN_OR_RETURN(Tensor indices, core::max_pool2d_indices(x, a.params));
  return std::pair<Tensor, Tensor>{y, indices};
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride,
                                                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return unwrap(core::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

Result<Tensor> core::avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const int64_t one = 1;
  EMBER_ASSIGN_OR_RETURN(Pool2dArgs a, pool2d_args("avg_pool2d", x, kernel_size, stride, padding,
                                                   IntArrayRef(&one, 1), ceil_mode, false));
  EMBER_CHECK(!divisor_override || *divisor_override != 0, Status::InvalidArgument, "divisor must be not zero");
  EMBER_TRY(check_pool_dtype("avg_pool2d", x, a.channels_last, /*allow_int64=*/true));
  a.params.count_include_pad = count_include_pad;
  a.params.divisor_override = divisor_override.value_or(0);
  return run_pool(OpKind::AvgPool2d, x, a);
}

Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return unwrap(core::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override));
}

Result<Tensor> core::adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  EMBER_CHECK(x.dim() >= 3, Status::InvalidArgument, "Input dimension should be at least 3");
  EMBER_CHECK(output_size.size() == 2, Status::InvalidArgument, "adaptive_avg_pool2d: output_size must be 2");
  EMBER_CHECK(output_size[0] >= 0 && output_size[1] >= 0, Status::InvalidArgument,
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {",
              output_size[0], ", ", output_size[1], "}");
  for (int64_t d = x.dim() - 2; d < x.dim(); ++d) {  // only H and W must be non-empty
    EMBER_CHECK(x.size(d) > 0, Status::InvalidArgument,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", shape_str(x.sizes()), " with dimension ", d, " being empty");
  }
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, Status::InvalidArgument,
              "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", shape_str(x.sizes()));
  const bool channels_last = (x.suggest_memory_format() == MemoryFormat::ChannelsLast);
  EMBER_TRY(check_pool_dtype("adaptive_avg_pool2d", x, channels_last, /*allow_int64=*/false));
  const bool batched = x.dim() == 4;
  Tensor result;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor in, batched_input(x, batched));
    EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({in.size(0), in.size(1), output_size[0], output_size[1]},
                                                   TensorOptions(x.dtype()).device(x.device()),
                                                   channels_last ? MemoryFormat::ChannelsLast
                                                                 : MemoryFormat::Contiguous));
    if (out.numel() > 0) EMBER_TRY(run_kernel(OpKind::AdaptiveAvgPool2d, {in}, {out}));
    EMBER_ASSIGN_OR_RETURN(result, unbatched_output(out, batched));
  }
  if (Node* n = autograd::record(GradRule::AdaptiveAvgPool2d, result, {x})) n->save(x);
  return result;
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  return unwrap(core::adaptive_avg_pool2d(x, output_size));
}

}  // namespace ember
