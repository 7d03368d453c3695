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
