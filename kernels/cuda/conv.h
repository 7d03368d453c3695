// The device half of Conv2d on CUDA (kernels/cuda/conv.cu.cc), called by the
// host half (conv.cc), which runs the GEMMs through cuBLAS.
#pragma once

#include <cstdint>

#include "runtime/backend/backend.h"

namespace ember::cuda {

// The columns of images [n0, n0 + count) of x [N, C, H, W] (any strides):
// cols [count, C * KH * KW, OH * OW], dense, x's dtype (zeros where the
// window reads the padding).
Status conv2d_im2col(const TensorView& x, int64_t n0, int64_t count, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                     const Conv2dParams& p, void* cols);

// out [N, C_out, P] (dense, bias's dtype): out[n, co, :] = bias[co].
Status conv2d_bias_fill(const TensorView& bias, int64_t n, int64_t p, void* out);

// The direct depthwise convolution (groups == C_in, C_out a multiple of it),
// any strides, bias optional (data == nullptr); accumulates in float (double
// for float64).
Status conv2d_depthwise(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                        const Conv2dParams& p);

}  // namespace ember::cuda
