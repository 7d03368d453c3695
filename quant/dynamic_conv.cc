#include "quant/dynamic_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/transpose16.h"
#include "quant/qscheme.h"
#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define RT_DYNCONV_X86 1
#else
#define RT_DYNCONV_X86 0
#endif

namespace ember::quant {
namespace {

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols, the threads
// splitting the columns (each writes whole rows of dst).
void transpose(const float* src, int64_t rows, int64_t cols, int64_t lds, float* dst, int64_t ldd, int threads) {
#if RT_DYNCONV_X86
  // (16 x 16 blocks in AVX-512 registers: the scalar loop moved about a float
  // a cycle, and with the product transposed the same way took 45 % of an int8
  // MobileNetV2 run.)
  static const auto kernel = __builtin_cpu_supports("avx512f") ? &cpu::transpose_block16 : &cpu::transpose_scalar;
#else
  static const auto kernel = &cpu::transpose_scalar;
#endif
  const int64_t blocks = (cols + 31) / 32;
  parallel_for(0, blocks, std::max<int64_t>(1, blocks / std::max(1, threads)), [&](int64_t b0, int64_t b1) {
    const int64_t c0 = b0 * 32, c1 = std::min(cols, b1 * 32);
    kernel(src + c0, rows, c1 - c0, lds, dst + c0 * ldd, ldd);
  });
}

// copy_over's largest run.
constexpr int64_t kOverMax = 64;

// The n <= kOverMax bytes at src to dst as one copy of 16, 32 or 64 bytes
// (loads and stores, not a call), where dst has room for it: it reads past
// src + n and overwrites the bytes past dst + n. False where it has no room.
inline bool copy_over(uint8_t* dst, const uint8_t* src, int64_t n, int64_t room) {
  if (n <= 16 && room >= 16) {
    std::memcpy(dst, src, 16);
  } else if (n <= 32 && room >= 32) {
    std::memcpy(dst, src, 32);
  } else if (n <= 64 && room >= 64) {
    std::memcpy(dst, src, 64);
  } else {
    return false;
  }
  return true;
}

// Rows [oy0, oy1) of one channels-last uint8 image's im2col matrix: a
// position (oy, ox) a row of k4 bytes, its columns (ky, kx, ci); the zero
// point (fill) outside the image, 0 past the depth. A kernel row inside the
// image is one run of kw * ci bytes (dilation 1), copied as one fixed-size
// copy past its end (copy_over) where the spill stays in the output row,
// which one thread writes. The parameters are locals: byte stores may alias
// anything, and the compiler reloaded them from `c` after each. With
// run_QConv2d's NCHW stem input, MobileNetV2's int8 stem, one thread (per-op
// minima): 0.41 -> 0.34 ms (a memcpy call a run before).
void im2col_rows(const uint8_t* image, int64_t h, int64_t w, int64_t ci, const PackedConv2d& c, int64_t ow,
                 int64_t k4, uint8_t fill, uint8_t* cols, int64_t oy0, int64_t oy1) {
  const int64_t kh = c.kh, kw = c.kw, sy = c.stride[0], sx = c.stride[1], py = c.padding[0], px = c.padding[1];
  const int64_t dy = c.dilation[0], dx = c.dilation[1], run = kw * ci;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      uint8_t* const pos = cols + (oy * ow + ox) * k4;
      uint8_t* row = pos;
      const int64_t x0 = ox * sx - px;
      for (int64_t ky = 0; ky < kh; ++ky, row += run) {
        const int64_t iy = oy * sy - py + ky * dy;
        if (iy < 0 || iy >= h) {
          std::memset(row, fill, static_cast<size_t>(run));
          continue;
        }
        const uint8_t* src = image + iy * w * ci;
        if (dx == 1 && x0 >= 0 && x0 + kw <= w) {
          if (!copy_over(row, src + x0 * ci, run, (ow - ox) * k4 - ky * run)) {
            std::memcpy(row, src + x0 * ci, static_cast<size_t>(run));
          }
          continue;
        }
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t ix = x0 + kx * dx;
          if (ix < 0 || ix >= w) {
            std::memset(row + kx * ci, fill, static_cast<size_t>(ci));
          } else {
            std::memcpy(row + kx * ci, src + ix * ci, static_cast<size_t>(ci));
          }
        }
      }
      for (int64_t i = kh * run; i < k4; ++i) pos[i] = 0;  // (at most 3)
    }
  }
}

}  // namespace

PackedConv2d pack_conv2d(const int8_t* q, int64_t c_out, int64_t c_in, int64_t kh, int64_t kw, const float* scales,
                         bool per_channel, const float* bias, const Conv2dParams& params) {
  // The GEMM's depth runs (ky, kx, ci): the im2col row of an output position
  // is then kh runs of kw * c_in bytes of the channels-last input.
  const int64_t taps = kh * kw;
  std::vector<int8_t> hwc(static_cast<size_t>(c_out * c_in * taps));
  for (int64_t o = 0; o < c_out; ++o) {
    for (int64_t ci = 0; ci < c_in; ++ci) {
      for (int64_t t = 0; t < taps; ++t) {
        hwc[static_cast<size_t>((o * taps + t) * c_in + ci)] = q[(o * c_in + ci) * taps + t];
      }
    }
  }
  PackedConv2d c;
  c.gemm = pack_linear(hwc.data(), c_out, c_in * taps, scales, per_channel, bias);
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
                    const Activation& act, const DynamicQuantOptions& options, int threads, bool x_channels_last,
                    bool y_channels_last) {
  if (threads <= 0) threads = get_num_threads();
  const int64_t oh = conv_out_size(c, 0, h), ow = conv_out_size(c, 1, w);
  const int64_t m = oh * ow, k4 = c.gemm.weight.k4, ci = c.c_in;
  if (n <= 0 || m <= 0 || c.c_out <= 0) return;
  // The input in channels last, hwc[((b * h + iy) * w + ix) * c_in + ci] (an
  // NCHW one transposed), quantized once, per tensor (per_row is not meaningful here).
  thread_local std::vector<uint8_t> hwc, cols;
  thread_local std::vector<float> tmp;
  const int64_t plane = ci * h * w;
  const float* nhwc = x;
  if (!x_channels_last) {
    if (tmp.size() < static_cast<size_t>(n * plane)) tmp.resize(static_cast<size_t>(n * plane));
    for (int64_t b = 0; b < n; ++b) transpose(x + b * plane, ci, h * w, h * w, tmp.data() + b * plane, ci, threads);
    nhwc = tmp.data();
  }
  if (hwc.size() < static_cast<size_t>(n * plane + kOverMax)) hwc.resize(static_cast<size_t>(n * plane + kOverMax));
  float scale;
  int32_t zp;
  // (One scale: quantize_activations_u8 takes the dense rows as one run.)
  quantize_activations_u8(nhwc, n * h * w, ci, ci, false, options.reduce_range, hwc.data(), ci, &scale, &zp);
  // A 1x1 convolution with stride 1 and no padding whose channels fill the
  // GEMM's depth reads the channels-last input as its A.
  const bool pointwise = c.kh == 1 && c.kw == 1 && c.stride[0] == 1 && c.stride[1] == 1 && c.padding[0] == 0 &&
                         c.padding[1] == 0 && ci == k4;
  if (!pointwise && cols.size() < static_cast<size_t>(m * k4)) cols.resize(static_cast<size_t>(m * k4));
  cpu::QGemmEpilogue ep;
  ep.a_scale = &scale;
  ep.a_zero_point = &zp;
  ep.w_scale = c.gemm.scales.data();
  ep.w_per_channel = c.gemm.per_channel;
  ep.bias = c.gemm.bias.empty() ? nullptr : c.gemm.bias.data();
  ep.activation = act;
  ep.y_transposed = !y_channels_last;
  // (The workers see their own thread_local buffers: they get the caller's by pointer.)
  uint8_t* const hwc_p = hwc.data();
  uint8_t* const cols_p = cols.data();
  const uint8_t fill = static_cast<uint8_t>(zp);  // real 0: the padding
  for (int64_t b = 0; b < n; ++b) {
    const uint8_t* image = hwc_p + b * plane;
    const uint8_t* a = image;
    if (!pointwise) {
      parallel_for(0, oh, std::max<int64_t>(1, oh / std::max(1, threads)), [&](int64_t y0, int64_t y1) {
        im2col_rows(image, h, w, ci, c, ow, k4, fill, cols_p, y0, y1);
      });
      a = cols_p;
    }
    // y[b]: [c_out, oh, ow], or [oh, ow, c_out] channels last
    cpu::qgemm_u8s8(m, a, k4, c.gemm.weight, &ep, nullptr, y + b * c.c_out * m, y_channels_last ? c.c_out : m,
                    threads);
  }
}

}  // namespace ember::quant
