// 2-D pooling over [N, C, H, W] views (any strides, so NCHW and channels_last
// alike): max, average and adaptive average, computed as PyTorch's CPU kernels
// do (same window bounds, accumulation types and division order).
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/ref/pool_window.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

namespace {

// The accumulator: float for 16-bit floats, T for float/double, int64 for integers.
template <typename T>
using pool_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

bool is_pool_geometry(const TensorView& in, const TensorView& out) {
  return in.rank == 4 && out.rank == 4 && in.dtype == out.dtype && in.sizes[0] == out.sizes[0] &&
         in.sizes[1] == out.sizes[1];
}

// Calls fn(n, c, oh, ow, in_plane, out_element) for every output element.
template <typename T, typename F>
void for_each_output(const TensorView& in, const TensorView& out, F&& fn) {
  const T* src = in.ptr<const T>();
  T* dst = out.ptr<T>();
  for (int64_t n = 0; n < out.sizes[0]; ++n) {
    for (int64_t c = 0; c < out.sizes[1]; ++c) {
      const T* plane = src + n * in.strides[0] + c * in.strides[1];
      for (int64_t oh = 0; oh < out.sizes[2]; ++oh) {
        for (int64_t ow = 0; ow < out.sizes[3]; ++ow) {
          fn(oh, ow, plane,
             dst[n * out.strides[0] + c * out.strides[1] + oh * out.strides[2] + ow * out.strides[3]]);
        }
      }
    }
  }
}

}  // namespace

Status max_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                  const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y), Status::InvalidArgument);
  EMBER_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 &&
                         p->dilation[0] > 0 && p->dilation[1] > 0,
                     Status::InvalidArgument);
  const int64_t H = x.sizes[2], W = x.sizes[3];
  const int64_t sh = x.strides[2], sw = x.strides[3];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    for_each_output<T>(x, y, [&](int64_t oh, int64_t ow, const T* plane, T& result) {
      const PoolWindow win = max_pool_window(*p, oh, ow, H, W);
      A best;
      if constexpr (std::is_floating_point_v<A>) {
        best = -std::numeric_limits<A>::infinity();
      } else {
        best = std::numeric_limits<A>::lowest();
      }
      for (int64_t h = win.h0; h < win.h1; h += p->dilation[0]) {
        for (int64_t w = win.w0; w < win.w1; w += p->dilation[1]) {
          const A v = convert<A>(plane[h * sh + w * sw]);
          bool take = v > best;
          if constexpr (std::is_floating_point_v<A>) take = take || std::isnan(v);
          if (take) best = v;
        }
      }
      result = convert<T>(best);
    });
  });
  return Status::Ok;
}

Status avg_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                  const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y), Status::InvalidArgument);
  EMBER_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 &&
                         p->divisor_override >= 0,
                     Status::InvalidArgument);
  const int64_t H = x.sizes[2], W = x.sizes[3];
  const int64_t sh = x.strides[2], sw = x.strides[3];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = pool_acc_t<T>;
    for_each_output<T>(x, y, [&](int64_t oh, int64_t ow, const T* plane, T& result) {
      const PoolWindow win = avg_pool_window(*p, oh, ow, H, W);
      if (win.empty()) {
        result = convert<T>(0);
        return;
      }
      A sum = 0;
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) sum += convert<A>(plane[h * sh + w * sw]);
      }
      if constexpr (std::is_integral_v<A>) {
        result = convert<T>(sum / win.divisor);
      } else {
        result = convert<T>(sum / static_cast<A>(win.divisor));
      }
    });
  });
  return Status::Ok;
}

Status adaptive_avg_pool2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams&) {
  EMBER_CHECK(in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y), Status::InvalidArgument);
  const int64_t H = x.sizes[2], W = x.sizes[3], OH = y.sizes[2], OW = y.sizes[3];
  EMBER_CHECK(y.numel() == 0 || (H > 0 && W > 0), Status::InvalidArgument);
  const int64_t sh = x.strides[2], sw = x.strides[3];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = pool_acc_t<T>;
    for_each_output<T>(x, y, [&](int64_t oh, int64_t ow, const T* plane, T& result) {
      const PoolWindow win = adaptive_pool_window(oh, ow, OH, OW, H, W);
      A sum = 0;
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) sum += convert<A>(plane[h * sh + w * sw]);
      }
      // Divided by the height, then the width, as PyTorch rounds it.
      if constexpr (std::is_integral_v<A>) {
        result = convert<T>(sum / (win.h1 - win.h0) / (win.w1 - win.w0));
      } else {
        result = convert<T>(sum / static_cast<A>(win.h1 - win.h0) / static_cast<A>(win.w1 - win.w0));
      }
    });
  });
  return Status::Ok;
}

}  // namespace ember::ref
