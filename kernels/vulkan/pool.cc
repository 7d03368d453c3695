// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d on Vulkan: float32 and float16
// [N, C, H, W] views with any strides (NCHW or channels last, in and out), one
// invocation per output element (shaders/pool_body.glsl; float16 values are
// accumulated in float32, where the device has shaderFloat16 and 16-bit
// storage), windows and rounding as kernels/ref/pool.cc (which accumulates
// float32 in float too).
#include <string>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/pool_window.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

struct PoolPush {
  uint32_t x_first, y_first;
  uint32_t mode;
  uint32_t total;
  int32_t N, C, H, W, OH, OW;
  int32_t xs[4], ys[4];
  PoolWindow win;
};
static_assert(sizeof(PoolPush) == 112, "mirrors the push block of shaders/pool_body.glsl");

constexpr int64_t kLimit = int64_t{1} << 31;  // the shader indexes with int32

Status pool(Span<const TensorView> in, Span<TensorView> out, const Pool2dParams* p, PoolMode mode) {
  if (in.size() != 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  if (x.rank != 4 || y.rank != 4 || x.sizes[0] != y.sizes[0] || x.sizes[1] != y.sizes[1]) {
    return Status::InvalidArgument;
  }
  const bool half = x.dtype == DType::Float16;
  if ((x.dtype != DType::Float32 && !half) || y.dtype != x.dtype) {
    Context::set_why("pooling on vulkan: float32 and float16 only");
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("pooling")) return Status::NotSupported;
  PoolPush push{};
  if (mode != kAdaptiveAvgPool) {
    if (!pool_window(p, true, &push.win)) return Status::InvalidArgument;
  } else if (y.numel() > 0 && (x.sizes[2] == 0 || x.sizes[3] == 0)) {
    return Status::InvalidArgument;
  }
  if (y.numel() == 0) return Status::Ok;
  if (x.numel() >= kLimit || y.numel() >= kLimit || extent(x) >= kLimit || extent(y) >= kLimit) {
    Context::set_why("pooling on vulkan: more than 2^31 elements");
    return Status::NotSupported;
  }
  push.mode = mode;
  push.total = static_cast<uint32_t>(y.numel());
  push.N = static_cast<int32_t>(x.sizes[0]);
  push.C = static_cast<int32_t>(x.sizes[1]);
  push.H = static_cast<int32_t>(x.sizes[2]);
  push.W = static_cast<int32_t>(x.sizes[3]);
  push.OH = static_cast<int32_t>(y.sizes[2]);
  push.OW = static_cast<int32_t>(y.sizes[3]);
  for (int d = 0; d < 4; ++d) {
    push.xs[d] = static_cast<int32_t>(x.strides[d]);
    push.ys[d] = static_cast<int32_t>(y.strides[d]);
  }
  Dispatch dsp(half ? shaders::pool_f16 : shaders::pool);
  push.x_first = dsp.bind(x);
  push.y_first = dsp.bind(y);
  const Grid g = grid(y.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace

Status max_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return pool(in, out, std::get_if<Pool2dParams>(&params), kMaxPool);
}

Status avg_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return pool(in, out, std::get_if<Pool2dParams>(&params), kAvgPool);
}

Status adaptive_avg_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams&) {
  return pool(in, out, nullptr, kAdaptiveAvgPool);
}

}  // namespace ember::vk
