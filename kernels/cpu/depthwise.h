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
#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/core/weight_memory.h"

namespace ember::cpu {

// The channels_last kernel's layout of a contiguous [C, 1, KH, KW] weight,
// [cp / lanes][taps][lanes] (cp: C rounded up to 16, zeros past C), for the
// vector width (`lanes`) of the ISA in use when it was packed; packed once
// at load (CpuPackedWeight::Layout::DepthwiseCl) instead of on every call.
struct DepthwiseClWeight {
  int64_t lanes = 0;
  WeightBuffer data;  // floats
};
DepthwiseClWeight depthwise_cl_weight(const float* w, int64_t channels, int64_t taps);
size_t depthwise_cl_weight_bytes(int64_t channels, int64_t taps);

// The channels_last kernel's operands for the ISA in use: the weight laid
// out [cp / lanes][taps][lanes] (`packed` where it has this ISA's lanes, else
// laid out in `scratch`) and the bias padded with zeros to cp (C rounded up
// to 16), in `scratch` (depthwise_cl_operands_bytes).
struct DepthwiseClOperands {
  const float* w;
  const float* b;
};
size_t depthwise_cl_operands_bytes(int64_t channels, int64_t taps);
DepthwiseClOperands depthwise_cl_operands(const TensorView& w, const TensorView& bias,
                                          const DepthwiseClWeight* packed, void* scratch);

// Output rows [r0, r1) of one image of the channels_last depthwise
// convolution of x (its geometry; not read) with w into o (o.data: the
// image's first output; channel stride 1), on the calling thread, from
// `band`: the input rows [first, first + rows) of that image, dense
// channels_last (W positions of C channels a row). The rows it reads inside
// the image must lie in the band. The same floats as depthwise_conv2d.
void depthwise_cl_band(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                       const float* band, int64_t first, int64_t rows, const DepthwiseClOperands& ops, int64_t r0,
                       int64_t r1);

// Scratch bytes depthwise_conv2d needs on up to `threads` threads (0 when the
// vector path does not apply: then it runs the scalar loop without scratch).
size_t depthwise_workspace(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                           int threads);

// out = act(bias + depthwise conv(x, w)). x, o: [N, C, H, W] with any strides;
// w: contiguous [C, 1, KH, KW]; bias: [C] or none (data == nullptr);
// `packed`: w as depthwise_cl_weight packed it, or null (the channels_last
// path then lays it out in the scratch on every call).
void depthwise_conv2d(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                      const Conv2dParams& prm, void* scratch, size_t scratch_bytes, int threads,
                      const DepthwiseClWeight* packed = nullptr);

// A convolution of few input channels (groups 1, at most 4: an image stem,
// 3x3 or 7x7 at stride 1 or 2): whether stem_conv2d runs it.
bool stem_applies(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm);

// Scratch bytes stem_conv2d needs on up to `threads` threads.
size_t stem_workspace(const TensorView& x, const TensorView& w, const TensorView& o, const Conv2dParams& prm,
                      int threads);

// out = act(bias + conv(x, w)) where stem_applies, directly: per output row,
// the input rows it reads padded (deinterleaved at stride 2, as the depthwise
// planes), then blocks of output channels and of the row's vectors, each input
// vector loaded once for all channels of its block (no im2col). Threads split
// the output rows. False when the scratch holds too little.
bool stem_conv2d(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                 const Conv2dParams& prm, void* scratch, size_t scratch_bytes, int threads);

}  // namespace ember::cpu
