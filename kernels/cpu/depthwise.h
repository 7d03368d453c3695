// Depthwise float32 Conv2d (one input and one output channel per group), for
// kernels/cpu/conv2d.cc. Each (image, channel) plane is copied into a
// zero-padded buffer, so every tap is a plain load; 16 outputs of a row form
// one vector (GCC vector extensions, built per ISA by RT_SIMD_CLONES: AVX-512,
// AVX2, SSE2 / NEON), up to four vectors share each tap's weight, and the
// bias and the fused activation (Conv2dParams::activation) are applied before
// the single store. Output rows of at most 8 (7x7 planes) take the channels
// into the vector lanes instead: 16 channels' planes transposed into one
// padded buffer, one output position per vector. Threads split the planes
// (or the channel groups).
#pragma once

#include <cstddef>

#include "runtime/backend/backend.h"

namespace ember::cpu {

// Scratch bytes depthwise_conv2d needs on up to `threads` threads (0 when the
// vector path does not apply: then it runs the scalar loop without scratch).
size_t depthwise_workspace(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                           int threads);

// out = act(bias + depthwise conv(x, w)). x, o: [N, C, H, W] with any strides;
// w: contiguous [C, 1, KH, KW]; bias: [C] or none (data == nullptr).
void depthwise_conv2d(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                      const Conv2dParams& prm, void* scratch, size_t scratch_bytes, int threads);

}  // namespace ember::cpu
