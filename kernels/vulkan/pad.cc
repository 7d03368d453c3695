// Pad on Vulkan: reflect / replicate / circular (and constant) padding of
// float32 and float16 views of up to 5 dims with any strides, in and out
// (shaders/pad_body.glsl), with the semantics of kernels/ref/pad.cc and
// kernels/ref/pad_index.h (negative pads crop). The values are copied, never
// computed: results are bit-exact.
#include <algorithm>
#include <string>

#include "kernels/ref/pad_index.h"
#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {
namespace {

constexpr int kPadMaxRank = 5;
constexpr int64_t kLimit = int64_t{1} << 31;  // the shader indexes with int32

struct PadPush {
  uint32_t x_first, y_first;
  uint32_t total;
  uint32_t mode;
  int32_t rank;
  int32_t osize[kPadMaxRank];
  int32_t isize[kPadMaxRank];
  int32_t before[kPadMaxRank];
  int32_t xs[kPadMaxRank];
  int32_t ys[kPadMaxRank];
  float value;
};
static_assert(sizeof(PadPush) == 124, "mirrors the push block of shaders/pad_body.glsl");

}  // namespace

Status pad(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  if (p == nullptr || in.size() != 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  if (x.rank != y.rank || x.dtype != y.dtype) return Status::InvalidArgument;
  for (int d = 0; d < x.rank; ++d) {
    if (!ref::pad_dim_is_valid(p->mode, x.sizes[d], p->before[d], p->after[d], y.sizes[d])) return Status::InvalidArgument;
  }
  const bool half = x.dtype == DType::Float16;
  if (x.dtype != DType::Float32 && !half) {
    Context::set_why("pad on vulkan: float32 and float16 only");
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("pad")) return Status::NotSupported;
  if (y.numel() == 0) return Status::Ok;
  if (x.rank > kPadMaxRank) {
    Context::set_why("pad on vulkan: at most 5 dims");
    return Status::NotSupported;
  }
  if (y.numel() >= kLimit || extent(x) >= kLimit || extent(y) >= kLimit) {
    Context::set_why("pad on vulkan: more than 2^31 elements");
    return Status::NotSupported;
  }
  PadPush push{};
  push.total = static_cast<uint32_t>(y.numel());
  push.mode = static_cast<uint32_t>(p->mode);
  push.rank = x.rank;
  for (int d = 0; d < x.rank; ++d) {
    push.osize[d] = static_cast<int32_t>(y.sizes[d]);
    push.isize[d] = static_cast<int32_t>(x.sizes[d]);
    push.before[d] = static_cast<int32_t>(p->before[d]);
    push.xs[d] = static_cast<int32_t>(x.strides[d]);
    push.ys[d] = static_cast<int32_t>(y.strides[d]);
  }
  // float16 holds the value as the reference's convert<Half> rounds it.
  push.value = half ? static_cast<float>(static_cast<Half>(static_cast<float>(p->value))) : static_cast<float>(p->value);
  Dispatch dsp(half ? shaders::pad_f16 : shaders::pad);
  push.x_first = dsp.bind(x);
  push.y_first = dsp.bind(y);
  const Grid g = grid(y.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace ember::vk

namespace ember::vk {
namespace {

struct PadBackwardPush {
  uint32_t g_first, gi_first;
  uint32_t total;
  uint32_t mode;
  int32_t rank;
  int32_t osize[kPadMaxRank];
  int32_t isize[kPadMaxRank];
  int32_t before[kPadMaxRank];
  int32_t gs[kPadMaxRank];
  int32_t gis[kPadMaxRank];
};
static_assert(sizeof(PadBackwardPush) == 120, "mirrors the push block of shaders/pad_backward_body.glsl");

}  // namespace

// PadBackward: grad_in (the input's shape, zeroed by the front-end) += the
// grad_out elements read from each position, float32 and float16, one
// invocation per grad_in element gathering them (shaders/pad_backward_body.glsl;
// no atomics: deterministic, in the order of kernels/ref/pad_backward.cc,
// whose checks these are).
Status pad_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<PadParams>(&params);
  if (p == nullptr || in.size() != 1 || out.size() != 1) return Status::InvalidArgument;
  const TensorView& grad = in[0];
  const TensorView& gi = out[0];
  if (grad.rank != gi.rank || grad.dtype != gi.dtype) return Status::InvalidArgument;
  for (int d = 0; d < grad.rank; ++d) {
    const int64_t size = gi.sizes[d];
    if (grad.sizes[d] != size + p->before[d] + p->after[d]) return Status::ShapeMismatch;
    if (grad.sizes[d] > 0 && (p->before[d] != 0 || p->after[d] != 0) && p->mode != PadMode::Constant) {
      const int64_t kept = size - std::max<int64_t>(-p->before[d], 0) - std::max<int64_t>(-p->after[d], 0);
      if (size <= 0 || kept <= 0) return Status::InvalidArgument;
      if (p->mode == PadMode::Reflect && (p->before[d] >= size || p->after[d] >= size)) return Status::InvalidArgument;
    }
  }
  const bool half = gi.dtype == DType::Float16;
  if (gi.dtype != DType::Float32 && !half) {
    Context::set_why("pad backward on vulkan: float32 and float16 only");
    return Status::DTypeMismatch;
  }
  if (half && !float16_supported("pad backward")) return Status::NotSupported;
  if (grad.numel() == 0 || gi.numel() == 0) return Status::Ok;
  if (gi.rank > kPadMaxRank) {
    Context::set_why("pad backward on vulkan: at most 5 dims");
    return Status::NotSupported;
  }
  if (gi.numel() >= kLimit || extent(grad) >= kLimit || extent(gi) >= kLimit) {
    Context::set_why("pad backward on vulkan: more than 2^31 elements");
    return Status::NotSupported;
  }
  PadBackwardPush push{};
  push.total = static_cast<uint32_t>(gi.numel());
  push.mode = static_cast<uint32_t>(p->mode);
  push.rank = gi.rank;
  for (int d = 0; d < gi.rank; ++d) {
    push.osize[d] = static_cast<int32_t>(grad.sizes[d]);
    push.isize[d] = static_cast<int32_t>(gi.sizes[d]);
    push.before[d] = static_cast<int32_t>(p->before[d]);
    push.gs[d] = static_cast<int32_t>(grad.strides[d]);
    push.gis[d] = static_cast<int32_t>(gi.strides[d]);
  }
  Dispatch dsp(half ? shaders::pad_backward_f16 : shaders::pad_backward);
  push.g_first = dsp.bind(grad);
  push.gi_first = dsp.bind(gi);
  const Grid g = grid(gi.numel(), 256);
  return dsp.run(push, g.x, g.y, 1, {256});
}

}  // namespace ember::vk
