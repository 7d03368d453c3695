// 2-D pooling on CUDA over [N, C, H, W] views of any strides (NCHW and
// channels_last alike): max, average and adaptive average, and their backward
// kernels. One thread per output element; the windows are the reference's
// (kernels/ref/pool_window.h, host and device), and so are the accumulation
// types (float for the 16-bit floats, int64 for integers) and the division
// order, so the forward kernels match the reference exactly. The backward
// kernels add each output gradient into the input positions its window read
// (the output is zeroed by the front-end) with atomics, since windows overlap;
// 16-bit floats accumulate in a float32 copy in the workspace.
#include <limits>
#include <type_traits>

#include "kernels/cuda/kernel_util.h"
#include "kernels/ref/pool_window.h"

namespace ember::cuda {
namespace {

// An [N, C, H, W] view: sizes and element strides.
struct Planes {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
  __device__ int64_t count() const { return n * c * h * w; }
  __device__ int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return in * sn + ic * sc + ih * sh + iw * sw;
  }
};

Planes planes(const TensorView& v) {
  return {v.sizes[0], v.sizes[1], v.sizes[2], v.sizes[3], v.strides[0], v.strides[1], v.strides[2], v.strides[3]};
}

// The output position (n, c, oh, ow) of linear index i over `o`'s sizes.
struct Pos {
  int64_t n, c, h, w;
};

__device__ inline Pos position(int64_t i, const Planes& o) {
  Pos p;
  p.w = i % o.w;
  i /= o.w;
  p.h = i % o.h;
  i /= o.h;
  p.c = i % o.c;
  p.n = i / o.c;
  return p;
}

// The accumulator: float for 16-bit floats, T for float/double, int64 for integers.
template <typename T>
using pool_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

template <typename T>
__global__ void max_pool_kernel(const T* x, Planes xv, T* y, Planes yv, Pool2dParams p) {
  using A = compute_t<T>;
  const int64_t total = yv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, yv);
    const T* plane = x + o.n * xv.sn + o.c * xv.sc;
    const ref::PoolWindow win = ref::max_pool_window(p, o.h, o.w, xv.h, xv.w);
    A best = -std::numeric_limits<A>::infinity();
    for (int64_t h = win.h0; h < win.h1; h += p.dilation[0]) {
      for (int64_t w = win.w0; w < win.w1; w += p.dilation[1]) {
        const A v = convert<A>(plane[h * xv.sh + w * xv.sw]);
        if (v > best || v != v) best = v;  // NaN propagates (the last NaN of the window)
      }
    }
    y[yv.at(o.n, o.c, o.h, o.w)] = convert<T>(best);
  }
}

template <typename T>
__global__ void avg_pool_kernel(const T* x, Planes xv, T* y, Planes yv, Pool2dParams p) {
  using A = pool_acc_t<T>;
  const int64_t total = yv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, yv);
    const T* plane = x + o.n * xv.sn + o.c * xv.sc;
    const ref::PoolWindow win = ref::avg_pool_window(p, o.h, o.w, xv.h, xv.w);
    T& result = y[yv.at(o.n, o.c, o.h, o.w)];
    if (win.empty()) {
      result = convert<T>(0);
      continue;
    }
    A sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) sum += convert<A>(plane[h * xv.sh + w * xv.sw]);
    }
    if constexpr (std::is_integral_v<A>) {
      result = convert<T>(sum / win.divisor);
    } else {
      result = convert<T>(sum / static_cast<A>(win.divisor));
    }
  }
}

template <typename T>
__global__ void adaptive_avg_pool_kernel(const T* x, Planes xv, T* y, Planes yv) {
  using A = compute_t<T>;
  const int64_t total = yv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, yv);
    const T* plane = x + o.n * xv.sn + o.c * xv.sc;
    const ref::PoolWindow win = ref::adaptive_pool_window(o.h, o.w, yv.h, yv.w, xv.h, xv.w);
    A sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) sum += convert<A>(plane[h * xv.sh + w * xv.sw]);
    }
    // Divided by the height, then the width, as PyTorch rounds it.
    y[yv.at(o.n, o.c, o.h, o.w)] = convert<T>(sum / static_cast<A>(win.h1 - win.h0) / static_cast<A>(win.w1 - win.w0));
  }
}

// Backward: g [N, C, OH, OW] (grad_out), gi [N, C, H, W] (grad_in, accumulated in
// compute_t<T>: the output itself, or its float32 copy for 16-bit floats).

template <typename T>
__global__ void max_pool_backward_kernel(const T* g, Planes gv, const T* x, Planes xv, compute_t<T>* gi, Planes giv,
                                         Pool2dParams p) {
  using A = compute_t<T>;
  const int64_t total = gv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, gv);
    const ref::PoolWindow win = ref::max_pool_window(p, o.h, o.w, xv.h, xv.w);
    if (win.empty()) continue;
    const T* plane = x + o.n * xv.sn + o.c * xv.sc;
    // The forward's choice: the first maximum of the window, or its last NaN.
    int64_t best_h = win.h0, best_w = win.w0;
    A best = -std::numeric_limits<A>::infinity();
    for (int64_t h = win.h0; h < win.h1; h += p.dilation[0]) {
      for (int64_t w = win.w0; w < win.w1; w += p.dilation[1]) {
        const A v = convert<A>(plane[h * xv.sh + w * xv.sw]);
        if (v > best || v != v) {
          best = v;
          best_h = h;
          best_w = w;
        }
      }
    }
    atomic_accumulate(gi + giv.at(o.n, o.c, best_h, best_w), convert<A>(g[gv.at(o.n, o.c, o.h, o.w)]));
  }
}

template <typename T>
__global__ void avg_pool_backward_kernel(const T* g, Planes gv, compute_t<T>* gi, Planes giv, Pool2dParams p) {
  using A = compute_t<T>;
  const int64_t total = gv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, gv);
    const ref::PoolWindow win = ref::avg_pool_window(p, o.h, o.w, giv.h, giv.w);
    if (win.empty()) continue;
    const A delta = convert<A>(g[gv.at(o.n, o.c, o.h, o.w)]) / static_cast<A>(win.divisor);
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) atomic_accumulate(gi + giv.at(o.n, o.c, h, w), delta);
    }
  }
}

template <typename T>
__global__ void adaptive_avg_pool_backward_kernel(const T* g, Planes gv, compute_t<T>* gi, Planes giv) {
  using A = compute_t<T>;
  const int64_t total = gv.count();
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    const Pos o = position(i, gv);
    const ref::PoolWindow win = ref::adaptive_pool_window(o.h, o.w, gv.h, gv.w, giv.h, giv.w);
    const A delta = convert<A>(g[gv.at(o.n, o.c, o.h, o.w)]) / static_cast<A>(win.h1 - win.h0) /
                    static_cast<A>(win.w1 - win.w0);
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) atomic_accumulate(gi + giv.at(o.n, o.c, h, w), delta);
    }
  }
}

bool is_pool_geometry(const TensorView& in, const TensorView& out) {
  return in.rank == 4 && out.rank == 4 && in.dtype == out.dtype && in.sizes[0] == out.sizes[0] &&
         in.sizes[1] == out.sizes[1];
}

bool max_params_ok(const Pool2dParams& p) {
  return p.kernel[0] > 0 && p.kernel[1] > 0 && p.stride[0] > 0 && p.stride[1] > 0 && p.dilation[0] > 0 &&
         p.dilation[1] > 0;
}

bool avg_params_ok(const Pool2dParams& p) {
  return p.kernel[0] > 0 && p.kernel[1] > 0 && p.stride[0] > 0 && p.stride[1] > 0 && p.divisor_override >= 0;
}

}  // namespace

size_t pool2d_backward_workspace(Span<const TensorView>, Span<const TensorView> out, const OpParams&) {
  return out.size() == 1 ? accumulator_bytes(out[0]) : 0;
}

EMBER_CUDA_KERNEL(max_pool2d) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y) && max_params_ok(*p), Status::InvalidArgument);
  return on_dtype<kFloatingTypes & kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &max_pool_kernel<T>;
    return launch_1d(k, y.numel(), "max_pool2d kernel", x.ptr<const T>(), planes(x), y.ptr<T>(), planes(y), *p);
  });
}

EMBER_CUDA_KERNEL(avg_pool2d) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y) && avg_params_ok(*p), Status::InvalidArgument);
  return on_dtype<kNumericTypes & kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &avg_pool_kernel<T>;
    return launch_1d(k, y.numel(), "avg_pool2d kernel", x.ptr<const T>(), planes(x), y.ptr<T>(), planes(y), *p);
  });
}

EMBER_CUDA_KERNEL(adaptive_avg_pool2d) {
  (void)params;
  EMBER_CHECK(in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &y = out[0];
  EMBER_CHECK(is_pool_geometry(x, y), Status::InvalidArgument);
  EMBER_CHECK(y.numel() == 0 || (x.sizes[2] > 0 && x.sizes[3] > 0), Status::InvalidArgument);
  return on_dtype<kFloatingTypes & kCudaAll>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &adaptive_avg_pool_kernel<T>;
    return launch_1d(k, y.numel(), "adaptive_avg_pool2d kernel", x.ptr<const T>(), planes(x), y.ptr<T>(), planes(y));
  });
}

Status max_pool2d_backward(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &grad = in[0], &x = in[1], &gi = out[0];
  EMBER_CHECK(is_pool_geometry(gi, grad) && x.rank == 4 && x.dtype == grad.dtype, Status::InvalidArgument);
  for (int d = 0; d < 4; ++d) EMBER_CHECK(x.sizes[d] == gi.sizes[d], Status::ShapeMismatch);
  EMBER_CHECK(max_params_ok(*p), Status::InvalidArgument);
  return on_dtype<kFloatingTypes & kCudaAll>(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return with_accumulator<T>(ctx, gi, [&](const TensorView& acc) {
      auto* k = &max_pool_backward_kernel<T>;
      return launch_1d(k, grad.numel(), "max_pool2d_backward kernel", grad.ptr<const T>(), planes(grad),
                       x.ptr<const T>(), planes(x), acc.ptr<compute_t<T>>(), planes(acc), *p);
    });
  });
}

Status avg_pool2d_backward(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                           const OpParams& params) {
  const auto* p = std::get_if<Pool2dParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &grad = in[0], &gi = out[0];
  EMBER_CHECK(is_pool_geometry(gi, grad) && avg_params_ok(*p), Status::InvalidArgument);
  return on_dtype<kFloatingTypes & kCudaAll>(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return with_accumulator<T>(ctx, gi, [&](const TensorView& acc) {
      auto* k = &avg_pool_backward_kernel<T>;
      return launch_1d(k, grad.numel(), "avg_pool2d_backward kernel", grad.ptr<const T>(), planes(grad),
                       acc.ptr<compute_t<T>>(), planes(acc), *p);
    });
  });
}

Status adaptive_avg_pool2d_backward(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                                    const OpParams&) {
  EMBER_CHECK(in.size() == 1 && out.size() == 1, Status::InvalidArgument);
  const TensorView &grad = in[0], &gi = out[0];
  EMBER_CHECK(is_pool_geometry(gi, grad), Status::InvalidArgument);
  EMBER_CHECK(grad.numel() == 0 || (gi.sizes[2] > 0 && gi.sizes[3] > 0), Status::InvalidArgument);
  return on_dtype<kFloatingTypes & kCudaAll>(grad.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return with_accumulator<T>(ctx, gi, [&](const TensorView& acc) {
      auto* k = &adaptive_avg_pool_backward_kernel<T>;
      return launch_1d(k, grad.numel(), "adaptive_avg_pool2d_backward kernel", grad.ptr<const T>(), planes(grad),
                       acc.ptr<compute_t<T>>(), planes(acc));
    });
  });
}

}  // namespace ember::cuda
