// The input window each 2-D pooling output reads, as PyTorch's CPU kernels
// compute it. Shared by the pooling kernels and their backward kernels, so the
// gradient always goes exactly where the forward read.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/core/host_device.h"
#include "runtime/graph/op_params.h"

namespace ember::ref {

// Rows [h0, h1) and columns [w0, w1) of the input; for max pooling the window
// is stepped by the dilation, for average pooling `divisor` is what the sum is
// divided by. An empty window (h0 >= h1 or w0 >= w1) reads nothing.
struct PoolWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor = 1;
  EMBER_HD bool empty() const { return h0 >= h1 || w0 >= w1; }
};

EMBER_HD inline PoolWindow max_pool_window(const Pool2dParams& p, int64_t oh, int64_t ow, int64_t H,
                                          int64_t W) {
  PoolWindow win;
  win.h0 = oh * p.stride[0] - p.padding[0];
  win.w0 = ow * p.stride[1] - p.padding[1];
  win.h1 = std::min(win.h0 + (p.kernel[0] - 1) * p.dilation[0] + 1, H);
  win.w1 = std::min(win.w0 + (p.kernel[1] - 1) * p.dilation[1] + 1, W);
  while (win.h0 < 0) win.h0 += p.dilation[0];
  while (win.w0 < 0) win.w0 += p.dilation[1];
  return win;
}

EMBER_HD inline PoolWindow avg_pool_window(const Pool2dParams& p, int64_t oh, int64_t ow, int64_t H,
                                          int64_t W) {
  PoolWindow win;
  win.h0 = oh * p.stride[0] - p.padding[0];
  win.w0 = ow * p.stride[1] - p.padding[1];
  win.h1 = std::min(win.h0 + p.kernel[0], H + p.padding[0]);
  win.w1 = std::min(win.w0 + p.kernel[1], W + p.padding[1]);
  const int64_t pool_size = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  win.h1 = std::min(win.h1, H);
  win.w1 = std::min(win.w1, W);
  win.divisor = p.divisor_override > 0 ? p.divisor_override
                : p.count_include_pad  ? pool_size
                                       : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

// Adaptive pooling: output i of `out` covers [floor(i * in / out), ceil((i + 1) * in / out));
// its sum is divided by the height, then by the width (PyTorch's rounding).
EMBER_HD inline PoolWindow adaptive_pool_window(int64_t oh, int64_t ow, int64_t OH, int64_t OW, int64_t H,
                                               int64_t W) {
  auto start = [](int64_t i, int64_t o, int64_t n) { return (i / o) * n + ((i % o) * n) / o; };
  auto end = [](int64_t i, int64_t o, int64_t n) { return 1 + ((i + 1) * n - 1) / o; };
  return PoolWindow{start(oh, OH, H), end(oh, OH, H), start(ow, OW, W), end(ow, OW, W)};
}

}  // namespace ember::ref
