// The tiled GEMM behind MatMul, shared with Conv2d (1x1 stride-1 convolutions
// run as [C_out, C_in] x [C_in, H*W] per image).
#pragma once

#include "kernels/vulkan/context.h"
#include "runtime/tensor/tensor_view.h"

namespace ember::vk {

// o[b, m, n] = sum_k a[b, m, k] * b[b, k, n] (+ bias[m * bias_sm + n * bias_sn]
// when bias.data != nullptr), for rank-3 views with any strides >= 0 (0 for a
// broadcast batch), float32, or float16 where caps().float16 (accumulating in
// float32). An empty K writes zeros (plus the bias).
Status gemm(const TensorView& a, const TensorView& b, const TensorView& bias, int64_t bias_sm, int64_t bias_sn,
            const TensorView& o);

// Element indices of a view must fit the shaders' 32-bit arithmetic; sets
// why() and returns false when they do not.
bool fits_uint32(const TensorView& v, const char* what);

}  // namespace ember::vk
