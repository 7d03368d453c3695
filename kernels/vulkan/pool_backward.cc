// MaxPool2dBackward, AvgPool2dBackward and AdaptiveAvgPool2dBackward on
// Vulkan: float32 and float16 [N, C, H, W] views with any strides, one
// invocation per grad_in element gathering the output gradients whose window
// read it (shaders/pool_backward_body.glsl): no atomics, deterministic, the
// windows and the order of the sums of kernels/ref/pool_backward.cc (float16
// values are summed in float32 and rounded once, where the device has
// shaderFloat16 and 16-bit storage). grad_in is zeroed by the front-end; the
// gradients are added to it.
#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/pool_window.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

struct PoolBackwardPush {
  uint32_t g_first, x_first, gi_first;
  uint32_t mode;
  uint32_t total;
  int32_t C, H, W, OH, OW;
  int32_t gs[4], xs[4], gis[4];
  PoolWindow win;
};
static_assert(sizeof(PoolBackwardPush) == 128, "mirrors the push block of shaders/pool_backward_body.glsl");

constexpr int64_t kLimit = int64_t{1} << 31;  // the shader indexes with int32

bool same_planes(const TensorView& a, const TensorView& b) {
  return a.rank == 4 && b.rank == 4 && a.dtype == b.dtype && a.sizes[0] == b.sizes[0] && a.sizes[1] == b.sizes[1];
}

// in: grad (and, for max pooling, the forward's input x); out: grad_in.
Status pool_backward(Span<const TensorView> in, Span<TensorView> out, const Pool2dParams* p, PoolMode mode) {
  const size_t n_in = mode == kMaxPool ? 2 : 1;
  if (in.size() != n_in || out.size() != 1) return Status::InvalidArgument;
  const TensorView& grad = in[0];
  const TensorView& x = in[n_in - 1];
  const TensorView& gi = out[0];
  if (!same_planes(grad, gi) || !same_planes(x, gi)) return Status::InvalidArgument;
  if (mode == kMaxPool) {
    for (int d = 2; d < 4; ++d) {
      if (x.sizes[d] != gi.sizes[d]) return Status::ShapeMismatch;
    }
  }
  const bool half = gi.dtype == DType::Float16;
  if (gi.dtype != DType::Float32 && !half) {
    Context::set_why("pooling backward on vulkan: float32 and float16 only");
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("pooling backward")) return Status::NotSupported;
  PoolBackwardPush push{};
  if (mode != kAdaptiveAvgPool) {
    if (!pool_window(p, mode == kMaxPool, &push.win)) return Status::InvalidArgument;
  } else if (grad.numel() > 0 && (gi.sizes[2] == 0 || gi.sizes[3] == 0)) {
    return Status::InvalidArgument;
  }
  if (gi.numel() == 0 || grad.numel() == 0) return Status::Ok;  // nothing to add
  if (gi.numel() >= kLimit || extent(gi) >= kLimit || extent(grad) >= kLimit || extent(x) >= kLimit ||
      grad.sizes[2] * gi.sizes[2] >= kLimit || grad.sizes[3] * gi.sizes[3] >= kLimit) {
    Context::set_why("pooling backward on vulkan: more than 2^31 elements");
    return Status::NotSupported;
  }
  push.mode = mode;
  push.total = static_cast<uint32_t>(gi.numel());
  push.C = static_cast<int32_t>(gi.sizes[1]);
  push.H = static_cast<int32_t>(gi.sizes[2]);
  push.W = static_cast<int32_t>(gi.sizes[3]);
  push.OH = static_cast<int32_t>(grad.sizes[2]);
  push.OW = static_cast<int32_t>(grad.sizes[3]);
  for (int d = 0; d < 4; ++d) {
    push.gs[d] = static_cast<int32_t>(grad.strides[d]);
    push.xs[d] = static_cast<int32_t>(x.strides[d]);
    push.gis[d] = static_cast<int32_t>(gi.strides[d]);
  }
  Dispatch dsp(half ? shaders::pool_backward_f16 : shaders::pool_backward);
  push.g_first = dsp.bind(grad);
  push.x_first = dsp.bind(x);  // grad again when the shader reads no input
  push.gi_first = dsp.bind(gi);
  const Grid g = grid(gi.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace

Status max_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  return pool_backward(in, out, std::get_if<Pool2dParams>(&params), kMaxPool);
}

Status avg_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  return pool_backward(in, out, std::get_if<Pool2dParams>(&params), kAvgPool);
}

Status adaptive_avg_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                                    const OpParams&) {
  return pool_backward(in, out, nullptr, kAdaptiveAvgPool);
}

}  // namespace ember::vk
