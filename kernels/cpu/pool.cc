// float32 max pooling (MaxPool2d) with the windows of kernels/ref/pool_window.h.
// Per output row: the elementwise maximum of the window's input rows into a
// row padded with -inf on both sides (the identity of the maximum, so every
// window is whole), then for each window column the maximum of that row read
// at the stride: vector loops (strided loads) without a clipped case. The
// whole plane is one function per ISA clone. NaN propagates as in the
// reference (a window holding a NaN gives NaN). Threads split the (image,
// channel) planes. A dense channels_last input and output: a vector over
// the channels per window position, threads splitting the output rows. Rows
// wider than kMaxRow, or another input whose W stride is not 1, use the
// reference kernel.
#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/ref/pool_window.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr int64_t kMaxRow = 4096;

// a NaN-sticky maximum: v replaces m when larger or NaN (branch-free).
inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }

// The padded row's length: every window column of every output, and the input row at `pad`.
int64_t padded_length(const Pool2dParams& p, int64_t w, int64_t ow_n) {
  return std::max((ow_n - 1) * p.stride[1] + (p.kernel[1] - 1) * p.dilation[1] + 1, p.padding[1] + w);
}

// dst[ow] = the maximum of row[ow + kw * d] over kw, from kw = 0 up.
__attribute__((always_inline)) inline void columns(const float* row, int64_t k, int64_t d, float* __restrict dst,
                                                   int64_t ow_n) {
  for (int64_t ow = 0; ow < ow_n; ++ow) dst[ow] = row[ow];
  for (int64_t kw = 1; kw < k; ++kw) {
    const float* r = row + kw * d;
    for (int64_t ow = 0; ow < ow_n; ++ow) dst[ow] = max_nan(dst[ow], r[ow]);
  }
}

// Per-row calls of a vector loop and a scalar walk of the clipped and the
// strided windows took 0.45 ms on ResNet-18's 64x112x112 3x3 stride-2
// pooling (one thread, Xeon); this plane function 0.21.
RT_SIMD_CLONES void pool_plane(const Pool2dParams& p, const float* x, int64_t h, int64_t w, int64_t xs_h, float* y,
                               int64_t oh_n, int64_t ow_n, int64_t ys_h, int64_t ys_w) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  float row[2 * kMaxRow + 1], even[kMaxRow], odd[kMaxRow];
  const int64_t s = p.stride[1], d = p.dilation[1], pad = p.padding[1];
  const int64_t len = padded_length(p, w, ow_n);
  std::fill(row, row + pad, kLow);
  std::fill(row + pad + w, row + len + 1, kLow);  // + 1: the last odd slot below
  float* in = row + pad;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const ref::PoolWindow rows = ref::max_pool_window(p, oh, 0, h, w);
    // The input rows two output rows on first read (past the plane: the
    // next plane's first rows, a hint that never faults). In ResNet-18 its
    // 64x112x112 input came from L3 or memory: 0.41 -> 0.34 ms (one thread).
    for (int64_t r = rows.h1 + p.stride[0]; r < rows.h1 + 2 * p.stride[0]; ++r) {
      prefetch_read(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(x) + r * xs_h * sizeof(float)),
                    w * static_cast<int64_t>(sizeof(float)));
    }
    std::fill(in, in + w, kLow);
    for (int64_t ih = rows.h0; ih < rows.h1; ih += p.dilation[0]) {
      const float* src = x + ih * xs_h;
      for (int64_t i = 0; i < w; ++i) in[i] = max_nan(in[i], src[i]);
    }
    float* dst = y + oh * ys_h;
    if (ys_w == 1 && s == 1) {
      columns(row, p.kernel[1], d, dst, ow_n);
    } else if (ys_w == 1 && s == 2 && d == 1) {
      // Window column kw of output ow is row[2 ow + kw]: even[ow + kw / 2] or
      // odd[ow + kw / 2], both contiguous.
      const int64_t half = (len + 1) / 2;
      for (int64_t j = 0; j < half; ++j) {
        even[j] = row[2 * j];
        odd[j] = row[2 * j + 1];
      }
      for (int64_t ow = 0; ow < ow_n; ++ow) dst[ow] = even[ow];
      for (int64_t kw = 1; kw < p.kernel[1]; ++kw) {
        const float* r = (kw % 2 == 0 ? even : odd) + kw / 2;
        for (int64_t ow = 0; ow < ow_n; ++ow) dst[ow] = max_nan(dst[ow], r[ow]);
      }
    } else {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        float m = row[ow * s];
        for (int64_t kw = 1; kw < p.kernel[1]; ++kw) m = max_nan(m, row[ow * s + kw * d]);
        dst[ow * ys_w] = m;
      }
    }
  }
}

// Output row oh of image x (dense channels_last, [H, W, C] in memory): each
// output position the maximum of its window's positions, a vector over the
// channels (NaN-sticky as pool_plane; -inf where a window is empty).
RT_SIMD_CLONES void pool_row_cl(const Pool2dParams& p, const float* x, int64_t h, int64_t w, int64_t c, float* y,
                                int64_t oh, int64_t ow_n) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  for (int64_t ow = 0; ow < ow_n; ++ow) {
    const ref::PoolWindow win = ref::max_pool_window(p, oh, ow, h, w);
    float* __restrict dst = y + ow * c;
    std::fill(dst, dst + c, kLow);
    for (int64_t ih = win.h0; ih < win.h1; ih += p.dilation[0]) {
      for (int64_t iw = win.w0; iw < win.w1; iw += p.dilation[1]) {
        const float* src = x + (ih * w + iw) * c;
        for (int64_t k = 0; k < c; ++k) dst[k] = max_nan(dst[k], src[k]);
      }
    }
  }
}

}  // namespace

Status max_pool2d_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  if (x.rank == 4 && y.rank == 4 && x.dtype == DType::Float32 && y.dtype == DType::Float32 &&
      x.sizes[0] == y.sizes[0] && x.sizes[1] == y.sizes[1] && !x.is_contiguous() && dense_channels_last(x) &&
      dense_channels_last(y)) {
    // channels_last in and out (the executor's layout around int8 convolutions): threads split the output rows.
    const int64_t c = x.sizes[1], h = x.sizes[2], w = x.sizes[3], oh_n = y.sizes[2], ow_n = y.sizes[3];
    const float* px = x.ptr<const float>();
    float* py = y.ptr<float>();
    const int64_t per_row = ow_n * c * p->kernel[0] * p->kernel[1];
    parallel_for(0, y.sizes[0] * oh_n, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, per_row)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const int64_t n = r / oh_n, oh = r % oh_n;
                     pool_row_cl(*p, px + n * h * w * c, h, w, c, py + (n * oh_n + oh) * ow_n * c, oh, ow_n);
                   }
                 });
    return Status::Ok;
  }
  if (x.rank != 4 || y.rank != 4 || x.dtype != DType::Float32 || y.dtype != DType::Float32 ||
      x.sizes[0] != y.sizes[0] || x.sizes[1] != y.sizes[1] || (x.strides[3] != 1 && x.sizes[3] > 1) ||
      x.sizes[3] > kMaxRow || p->kernel[0] <= 0 || p->kernel[1] <= 0 || p->stride[0] <= 0 || p->stride[1] <= 0 ||
      p->dilation[0] <= 0 || p->dilation[1] <= 0 || p->padding[0] < 0 || p->padding[1] < 0 ||
      padded_length(*p, x.sizes[3], y.sizes[3]) > 2 * kMaxRow) {
    return ref::max_pool2d(ctx, in, out, params);
  }
  const int64_t channels = y.sizes[1], planes = y.sizes[0] * channels;
  if (planes == 0 || y.sizes[2] == 0 || y.sizes[3] == 0) return Status::Ok;
  const float* px = x.ptr<const float>();
  float* py = y.ptr<float>();
  const int64_t per_plane = x.sizes[2] * x.sizes[3] + y.sizes[2] * y.sizes[3] * p->kernel[1];
  parallel_for(0, planes, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, per_plane)), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / channels, c = u % channels;
      pool_plane(*p, px + n * x.strides[0] + c * x.strides[1], x.sizes[2], x.sizes[3], x.strides[2],
                 py + n * y.strides[0] + c * y.strides[1], y.sizes[2], y.sizes[3], y.strides[2], y.strides[3]);
    }
  });
  return Status::Ok;
}

}  // namespace ember::cpu
