// The pooling window of Pool2dParams as the pooling shaders read it: the tail
// of the push blocks of shaders/pool_body.glsl and pool_backward_body.glsl
// (pool.cc, pool_backward.cc).
#ifndef EMBER_KERNELS_VULKAN_POOL_WINDOW_H_
#define EMBER_KERNELS_VULKAN_POOL_WINDOW_H_

#include <cstdint>

#include "runtime/graph/op_params.h"

namespace ember::vk {

enum PoolMode : uint32_t { kMaxPool = 0, kAvgPool = 1, kAdaptiveAvgPool = 2 };

struct PoolWindow {
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int32_t count_include_pad;
  int32_t divisor_override;
};

// False for a missing or invalid window (non-positive kernel or stride,
// negative divisor; dilation too where the pooling reads it).
inline bool pool_window(const Pool2dParams* p, bool uses_dilation, PoolWindow* w) {
  if (p == nullptr || p->kernel[0] <= 0 || p->kernel[1] <= 0 || p->stride[0] <= 0 || p->stride[1] <= 0 ||
      p->divisor_override < 0 || (uses_dilation && (p->dilation[0] <= 0 || p->dilation[1] <= 0))) {
    return false;
  }
  *w = PoolWindow{static_cast<int32_t>(p->kernel[0]),  static_cast<int32_t>(p->kernel[1]),
                  static_cast<int32_t>(p->stride[0]),  static_cast<int32_t>(p->stride[1]),
                  static_cast<int32_t>(p->padding[0]), static_cast<int32_t>(p->padding[1]),
                  static_cast<int32_t>(p->dilation[0]), static_cast<int32_t>(p->dilation[1]),
                  p->count_include_pad ? 1 : 0,        static_cast<int32_t>(p->divisor_override)};
  return true;
}

}  // namespace ember::vk

#endif  // EMBER_KERNELS_VULKAN_POOL_WINDOW_H_
