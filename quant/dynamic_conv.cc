#include "quant/dynamic_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/qscheme.h"
#include "runtime/core/thread_pool.h"

namespace ember::quant {
namespace {

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols, in 32 x 32 blocks
// (both sides stay within a few cache lines per block).
template <typename T>
void transpose(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t kB = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kB) {
    const int64_t r1 = std::min(rows, r0 + kB);
    for (int64_t c0 = 0; c0 < cols; c0 += kB) {
      const int64_t c1 = std::min(cols, c0 + kB);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * ldd + r] = src[r * lds + c];
      }
    }
  }
}

}  // namespace

PackedConv2d pack_conv2d(const int8_t* q, int64_t c_out, int64_t c_in, int64_t kh, int64_t kw, const float* scales,
                         bool per_channel, const float* bias, const Conv2dParams& params) {
  PackedConv2d c;
  c.gemm = pack_linear(q, c_out, c_in * kh * kw, scales, per_channel, bias);
  c.c_out = c_out;
  c.c_in = c_in;
  c.kh = kh;
  c.kw = kw;
  for (int d = 0; d < 2; ++d) {
    c.stride[d] = params.stride[d];
    c.padding[d] = params.padding[d];
    c.dilation[d] = params.dilation[d];
  }
  return c;
}

int64_t conv_out_size(const PackedConv2d& c, int d, int64_t in) {
  const int64_t k = d == 0 ? c.kh : c.kw;
  const int64_t span = c.dilation[d] * (k - 1) + 1;
  const int64_t padded = in + 2 * c.padding[d];
  return padded < span ? 0 : (padded - span) / c.stride[d] + 1;
}

void dynamic_conv2d(const float* x, int64_t n, int64_t h, int64_t w, const PackedConv2d& c, float* y,
                    const Activation& act, const DynamicQuantOptions& options, int threads) {
  if (threads <= 0) threads = get_num_threads();
  const int64_t oh = conv_out_size(c, 0, h), ow = conv_out_size(c, 1, w);
  const int64_t m = oh * ow, k4 = c.gemm.weight.k4;
  if (n <= 0 || m <= 0 || c.c_out <= 0) return;
  // The input quantized once, per tensor (per_row is not meaningful here).
  thread_local std::vector<uint8_t> qx, cols;
  thread_local std::vector<float> tmp;
  const int64_t plane = c.c_in * h * w;
  if (qx.size() < static_cast<size_t>(n * plane)) qx.resize(static_cast<size_t>(n * plane));
  float scale;
  int32_t zp;
  quantize_activations_u8(x, 1, n * plane, n * plane, false, options.reduce_range, qx.data(), n * plane, &scale,
                          &zp);
  if (cols.size() < static_cast<size_t>(m * k4)) cols.resize(static_cast<size_t>(m * k4));
  if (tmp.size() < static_cast<size_t>(m * c.c_out)) tmp.resize(static_cast<size_t>(m * c.c_out));
  cpu::QGemmEpilogue ep;
  ep.a_scale = &scale;
  ep.a_zero_point = &zp;
  ep.w_scale = c.gemm.scales.data();
  ep.w_per_channel = c.gemm.per_channel;
  ep.bias = c.gemm.bias.empty() ? nullptr : c.gemm.bias.data();
  ep.activation = act;
  for (int64_t b = 0; b < n; ++b) {
    const uint8_t* xb = qx.data() + b * plane;
    // im2col: row (oy, ox), column (ci, ky, kx); outside the image: the zero point.
    // A 1x1 convolution with stride 1 and no padding reads the input as it is:
    // [c_in, h * w] transposed.
    const bool pointwise = c.kh == 1 && c.kw == 1 && c.stride[0] == 1 && c.stride[1] == 1 && c.padding[0] == 0 &&
                           c.padding[1] == 0;
    if (pointwise) {
      transpose(xb, c.c_in, m, m, cols.data(), k4);
      for (int64_t p = 0; p < m && k4 > c.c_in; ++p) {
        std::memset(cols.data() + p * k4 + c.c_in, 0, static_cast<size_t>(k4 - c.c_in));
      }
    }
    for (int64_t oy = 0; oy < (pointwise ? 0 : oh); ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        uint8_t* row = cols.data() + (oy * ow + ox) * k4;
        int64_t col = 0;
        for (int64_t ci = 0; ci < c.c_in; ++ci) {
          for (int64_t ky = 0; ky < c.kh; ++ky) {
            const int64_t iy = oy * c.stride[0] - c.padding[0] + ky * c.dilation[0];
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t ix = ox * c.stride[1] - c.padding[1] + kx * c.dilation[1];
              row[col++] = (iy < 0 || iy >= h || ix < 0 || ix >= w) ? static_cast<uint8_t>(zp)
                                                                    : xb[(ci * h + iy) * w + ix];
            }
          }
        }
        for (; col < k4; ++col) row[col] = 0;
      }
    }
    cpu::qgemm_u8s8(m, cols.data(), k4, c.gemm.weight, &ep, nullptr, tmp.data(), c.c_out, threads);
    // [oh * ow, c_out] -> [c_out, oh, ow]
    transpose(tmp.data(), m, c.c_out, c.c_out, y + b * c.c_out * m, m);
  }
}

}  // namespace ember::quant
