// Dynamic int8 Conv2d (groups = 1): the input is quantized per tensor to uint8
// at run time (as quantize_dynamic's Linear does), transposed to channels
// last (unless it is already), unfolded (im2col: a kernel row is one run of
// kw * C_in bytes there; padding = the zero point, i.e. real 0) and
// multiplied with the int8 weight, viewed as [C_out, kh * kw * C_in], by the
// int8 GEMM; dequantization, bias and the activation are fused in its
// epilogue, which stores the product transposed, as NCHW (or as it is,
// channels last). The threads split the input's transpose, the im2col rows
// and the GEMM. Weights packed once (immutable).
#pragma once

#include <cstdint>

#include "quant/dynamic_linear.h"
#include "runtime/graph/op_params.h"

namespace ember::quant {

struct PackedConv2d {
  PackedLinear gemm;  // [C_out, C_in * kh * kw]
  int64_t c_out = 0, c_in = 0, kh = 0, kw = 0;
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};
};

// q: int8 weight [c_out, c_in, kh, kw]; scales: 1 or c_out; bias: c_out or null.
PackedConv2d pack_conv2d(const int8_t* q, int64_t c_out, int64_t c_in, int64_t kh, int64_t kw, const float* scales,
                         bool per_channel, const float* bias, const Conv2dParams& params);

// Output spatial size for input size `in` along dimension d (0: height, 1: width).
int64_t conv_out_size(const PackedConv2d& c, int d, int64_t in);

// y [n, c_out, oh, ow] = act(conv2d(x [n, c_in, h, w])) with dynamic int8;
// x_channels_last: x is [n, h, w, c_in] in memory; y_channels_last: y is
// [n, oh, ow, c_out].
void dynamic_conv2d(const float* x, int64_t n, int64_t h, int64_t w, const PackedConv2d& c, float* y,
                    const Activation& act, const DynamicQuantOptions& options = {}, int threads = 0,
                    bool x_channels_last = false, bool y_channels_last = false);

}  // namespace ember::quant
