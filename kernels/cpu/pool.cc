// float32 max pooling (MaxPool2d) with the windows of kernels/ref/pool_window.h.
// Per output row: the elementwise maximum of the window's input rows (a
// vector loop over W), then the maximum over each window's columns of that
// row (pool_plane). NaN propagates as in the reference (a window holding a
// NaN gives NaN). Threads split the (image, channel) planes. Rows wider than
// kMaxRow, or an input whose W stride is not 1, use the reference kernel.
#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/ref/pool_window.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr int64_t kMaxRow = 4096;

// a NaN-sticky maximum: v replaces m when larger or NaN (branch-free).
inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }

RT_SIMD_CLONES void row_max(float* __restrict acc, const float* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = max_nan(acc[i], src[i]);
}

void pool_plane(const Pool2dParams& p, const float* x, int64_t h, int64_t w, int64_t xs_h, float* y, int64_t oh_n,
                int64_t ow_n, int64_t ys_h, int64_t ys_w) {
  float row[kMaxRow], hmax[kMaxRow];
  // Columns: hmax[i] is the maximum over the window starting at input column
  // i, for every i whose window fits in the row (vector loops); outputs whose
  // window lies inside the row read it, the others (at the padding) walk
  // their clipped window. A scalar walk per output, with a branch per
  // compare, was most of the time: 4.8 ms of resnet18's 64x112x112 pooling.
  const int64_t s = p.stride[1], d = p.dilation[1], pad = p.padding[1];
  const int64_t span = (p.kernel[1] - 1) * d + 1, fits = w - span + 1;
  const int64_t ow_lo = std::min(ow_n, (pad + s - 1) / s);
  const int64_t ow_hi = fits > 0 ? std::max(ow_lo, std::min(ow_n, (fits - 1 + pad) / s + 1)) : ow_lo;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const ref::PoolWindow rows = ref::max_pool_window(p, oh, 0, h, w);
    std::fill(row, row + w, -std::numeric_limits<float>::infinity());
    for (int64_t ih = rows.h0; ih < rows.h1; ih += p.dilation[0]) row_max(row, x + ih * xs_h, w);
    float* dst = y + oh * ys_h;
    if (ow_hi > ow_lo) {
      std::copy(row, row + fits, hmax);
      for (int64_t kw = 1; kw < p.kernel[1]; ++kw) row_max(hmax, row + kw * d, fits);
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) dst[ow * ys_w] = hmax[ow * s - pad];
    }
    auto clipped = [&](int64_t ow) {
      const ref::PoolWindow win = ref::max_pool_window(p, oh, ow, h, w);
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t iw = win.w0; iw < win.w1; iw += d) best = max_nan(best, row[iw]);
      dst[ow * ys_w] = best;
    };
    for (int64_t ow = 0; ow < ow_lo; ++ow) clipped(ow);
    for (int64_t ow = ow_hi; ow < ow_n; ++ow) clipped(ow);
  }
}

}  // namespace

Status max_pool2d_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  if (x.rank != 4 || y.rank != 4 || x.dtype != DType::Float32 || y.dtype != DType::Float32 ||
      x.sizes[0] != y.sizes[0] || x.sizes[1] != y.sizes[1] || (x.strides[3] != 1 && x.sizes[3] > 1) ||
      x.sizes[3] > kMaxRow || p->kernel[0] <= 0 || p->kernel[1] <= 0 || p->stride[0] <= 0 || p->stride[1] <= 0 ||
      p->dilation[0] <= 0 || p->dilation[1] <= 0) {
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
