// Declarations of the Vulkan kernels (from kernels/vulkan/kernels.inc).
#pragma once

#include "runtime/backend/backend.h"

namespace ember::vk {

#define RT_KERNEL(op, dtypes, fn)                                                      \
  Status fn(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, \
            const OpParams& params);
#define RT_KERNEL_DENSE(op, dtypes, fn) RT_KERNEL(op, dtypes, fn)
#define RT_KERNEL_WS(op, dtypes, fn, ws)                                        \
  RT_KERNEL(op, dtypes, fn)                                                     \
  size_t ws(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params);
#define RT_KERNEL_DENSE_WS(op, dtypes, fn, ws) RT_KERNEL_WS(op, dtypes, fn, ws)
#include "kernels/vulkan/kernels.inc"
#undef RT_KERNEL
#undef RT_KERNEL_DENSE
#undef RT_KERNEL_WS
#undef RT_KERNEL_DENSE_WS

}  // namespace ember::vk
