// Fill: every element of a contiguous 32-bit tensor set to one value.
#include <cstring>

#include "kernels/vulkan/dispatch.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

Status fill(const KernelContext&, Span<const TensorView>, Span<TensorView> out, const OpParams& params) {
  const TensorView& o = out[0];
  const auto* p = std::get_if<ScalarParams>(&params);
  if (p == nullptr) return Status::InvalidArgument;
  if (!o.is_contiguous()) {
    Context::set_why("fill on vulkan needs a contiguous tensor");
    return Status::NotSupported;
  }
  struct {
    uint32_t first, n;
    uint32_t bits;  // the value's 32 bits (float or int)
  } push{};
  if (o.dtype == DType::Float32) {
    const float v = p->value.to<float>();
    std::memcpy(&push.bits, &v, 4);
  } else {
    const int32_t v = p->value.to<int32_t>();
    std::memcpy(&push.bits, &v, 4);
  }
  Dispatch d(shaders::fill_u32);
  push.first = d.bind(o);
  push.n = static_cast<uint32_t>(o.numel());
  const Grid g = grid(o.numel(), 256);
  return d.run(push, g.x, g.y, 1, {256});
}

}  // namespace ember::vk
