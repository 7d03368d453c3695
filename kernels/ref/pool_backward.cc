// Backward of 2-D pooling over [N, C, H, W] views (any strides): every output
// gradient is added into the input positions its window read. The output
// (grad_in) is zeroed by the front-end; the windows are the forward kernels'
// (pool_window.h), and max pooling re-finds the forward's choice: the first
// maximum of the window, or its last NaN, as PyTorch's CPU kernel records it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/ref/pool_window.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/tensor/convert.h"

namespace ember::ref {

namespace {

bool same_planes(const TensorView& grad, const TensorView& grad_in) {
  return grad.rank == 4 && grad_in.rank == 4 && grad.dtype == grad_in.dtype && grad.sizes[0] == grad_in.sizes[0] &&
         grad.sizes[1] == grad_in.sizes[1];
}

// Calls fn(grad_value, input_plane_offset, grad_in_plane) for every element of grad.
template <typename T, typename F>
void for_each_grad(const TensorView& grad, const TensorView& grad_in, F&& fn) {
  const T* g = grad.ptr<const T>();
  T* gi = grad_in.ptr<T>();
  for (int64_t n = 0; n < grad.sizes[0]; ++n) {
    for (int64_t c = 0; c < grad.sizes[1]; ++c) {
      T* plane = gi + n * grad_in.strides[0] + c * grad_in.strides[1];
      for (int64_t oh = 0; oh < grad.sizes[2]; ++oh) {
        for (int64_t ow = 0; ow < grad.sizes[3]; ++ow) {
          fn(n, c, oh, ow, g[n * grad.strides[0] + c * grad.strides[1] + oh * grad.strides[2] + ow * grad.strides[3]],
             plane);
        }
      }
    }
  }
}

// The (h, w) of the maximum of window `win` of `plane` as PyTorch's
// max_pool2d_with_indices picks it: the first largest value, or the last NaN.
template <typename A, typename T>
std::pair<int64_t, int64_t> max_pool_argmax(const Pool2dParams& p, const PoolWindow& win, const T* plane, int64_t sh,
                                            int64_t sw) {
  int64_t best_h = win.h0, best_w = win.w0;
  A best = -std::numeric_limits<A>::infinity();
  for (int64_t h = win.h0; h < win.h1; h += p.dilation[0]) {
    for (int64_t w = win.w0; w < win.w1; w += p.dilation[1]) {
      const A v = convert<A>(plane[h * sh + w * sw]);
      if (v > best || std::isnan(v)) {
        best = v;
        best_h = h;
        best_w = w;
      }
    }
  }
  return {best_h, best_w};
}

template <typename T>
void add_to(T& dst, compute_t<T> v) {
  dst = convert<T>(convert<compute_t<T>>(dst) + v);
}

}  // namespace

Status max_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView& grad = in[0];
  const TensorView& x = in[1];
  const TensorView& grad_in = out[0];
  EMBER_CHECK(same_planes(grad, grad_in) && x.rank == 4 && x.dtype == grad.dtype, Status::InvalidArgument);
  for (int d = 0; d < 4; ++d) EMBER_CHECK(x.sizes[d] == grad_in.sizes[d], Status::ShapeMismatch);
  EMBER_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 &&
                         p->dilation[0] > 0 && p->dilation[1] > 0,
                     Status::InvalidArgument);
  const int64_t H = x.sizes[2], W = x.sizes[3];
  const int64_t sh = x.strides[2], sw = x.strides[3];
  const int64_t gsh = grad_in.strides[2], gsw = grad_in.strides[3];
  dispatch_dtype(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      const T* src = x.ptr<const T>();
      for_each_grad<T>(grad, grad_in, [&](int64_t n, int64_t c, int64_t oh, int64_t ow, T g, T* plane) {
        const T* xp = src + n * x.strides[0] + c * x.strides[1];
        const PoolWindow win = max_pool_window(*p, oh, ow, H, W);
        if (win.empty()) return;
        const auto [best_h, best_w] = max_pool_argmax<A>(*p, win, xp, sh, sw);
        add_to(plane[best_h * gsh + best_w * gsw], convert<A>(g));
      });
    }
  });
  return Status::Ok;
}

// The forward's choices themselves: int64 h * W + w per output (the argmax of max_pool2d_backward).
Status max_pool2d_indices(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                          const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  EMBER_CHECK(x.rank == 4 && y.rank == 4 && y.dtype == DType::Int64 && x.sizes[0] == y.sizes[0] &&
                         x.sizes[1] == y.sizes[1],
                     Status::InvalidArgument);
  EMBER_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 &&
                         p->dilation[0] > 0 && p->dilation[1] > 0,
                     Status::InvalidArgument);
  const int64_t H = x.sizes[2], W = x.sizes[3];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      int64_t* dst = y.ptr<int64_t>();
      for (int64_t n = 0; n < y.sizes[0]; ++n) {
        for (int64_t c = 0; c < y.sizes[1]; ++c) {
          const T* plane = x.ptr<const T>() + n * x.strides[0] + c * x.strides[1];
          for (int64_t oh = 0; oh < y.sizes[2]; ++oh) {
            for (int64_t ow = 0; ow < y.sizes[3]; ++ow) {
              const PoolWindow win = max_pool_window(*p, oh, ow, H, W);
              const auto [h, w] = max_pool_argmax<A>(*p, win, plane, x.strides[2], x.strides[3]);
              dst[n * y.strides[0] + c * y.strides[1] + oh * y.strides[2] + ow * y.strides[3]] = h * W + w;
            }
          }
        }
      }
    }
  });
  return Status::Ok;
}

Status avg_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& grad = in[0];
  const TensorView& grad_in = out[0];
  EMBER_CHECK(same_planes(grad, grad_in), Status::InvalidArgument);
  EMBER_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 &&
                         p->divisor_override >= 0,
                     Status::InvalidArgument);
  const int64_t H = grad_in.sizes[2], W = grad_in.sizes[3];
  const int64_t gsh = grad_in.strides[2], gsw = grad_in.strides[3];
  dispatch_dtype(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      for_each_grad<T>(grad, grad_in, [&](int64_t, int64_t, int64_t oh, int64_t ow, T g, T* plane) {
        const PoolWindow win = avg_pool_window(*p, oh, ow, H, W);
        if (win.empty()) return;
        const A delta = convert<A>(g) / static_cast<A>(win.divisor);
        for (int64_t h = win.h0; h < win.h1; ++h) {
          for (int64_t w = win.w0; w < win.w1; ++w) add_to(plane[h * gsh + w * gsw], delta);
        }
      });
    }
  });
  return Status::Ok;
}

Status adaptive_avg_pool2d_backward(const KernelContext&, Span<const TensorView> in, Span<TensorView> out,
                                    const OpParams&) {
  EMBER_CHECK(in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView& grad = in[0];
  const TensorView& grad_in = out[0];
  EMBER_CHECK(same_planes(grad, grad_in), Status::InvalidArgument);
  const int64_t H = grad_in.sizes[2], W = grad_in.sizes[3], OH = grad.sizes[2], OW = grad.sizes[3];
  EMBER_CHECK(grad.numel() == 0 || (H > 0 && W > 0), Status::InvalidArgument);
  const int64_t gsh = grad_in.strides[2], gsw = grad_in.strides[3];
  dispatch_dtype(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = compute_t<T>;
    if constexpr (std::is_floating_point_v<A>) {
      for_each_grad<T>(grad, grad_in, [&](int64_t, int64_t, int64_t oh, int64_t ow, T g, T* plane) {
        const PoolWindow win = adaptive_pool_window(oh, ow, OH, OW, H, W);
        const A delta = convert<A>(g) / static_cast<A>(win.h1 - win.h0) / static_cast<A>(win.w1 - win.w0);
        for (int64_t h = win.h0; h < win.h1; ++h) {
          for (int64_t w = win.w0; w < win.w1; ++w) add_to(plane[h * gsh + w * gsw], delta);
        }
      });
    }
  });
  return Status::Ok;
}

}  // namespace ember::ref
