// Copy: strided -> strided with dtype conversion (as C++ casts: float -> int
// truncates, anything -> bool is `!= 0`), between float32, float16, int32,
// int64, uint8, int8 and bool. `.contiguous()`, `.to(dtype)` and
// RT_KERNEL_DENSE rely on it.
#include "kernels/vulkan/elementwise.h"
#include "kernels/vulkan/vk_kernels.h"

namespace ember::vk {

Status copy(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams&) {
  struct {
    ElemLayout<2> layout;
  } push;
  return run_elementwise<2>("copy", &shaders::copy, shaders::copy_ext, 0, {&out[0], &in[0]}, push);
}

}  // namespace ember::vk
