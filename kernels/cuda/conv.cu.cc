// Conv2d's device kernels on CUDA: im2col into the workspace and the bias
// fill for the cuBLAS path (kernels/cuda/conv.cc), and the direct depthwise
// kernel. One thread per element written; every input view may have any
// strides.
#include "kernels/cuda/conv.h"

#include "kernels/cuda/kernel_util.h"

namespace ember::cuda {
namespace {

// The conv geometry the kernels read (Conv2dParams without the activation).
struct Geometry {
  int64_t stride[2], padding[2], dilation[2];
};

Geometry geometry(const Conv2dParams& p) {
  return {{p.stride[0], p.stride[1]}, {p.padding[0], p.padding[1]}, {p.dilation[0], p.dilation[1]}};
}

// cols[img, (c * KH + kh) * KW + kw, oh * OW + ow] = x[n0 + img, c, ih, iw] (or 0 in the padding).
template <typename T>
__global__ void im2col_kernel(const T* x, NdView xv, T* cols, int64_t kh_n, int64_t kw_n, int64_t oh_n,
                              int64_t ow_n, Geometry g, int64_t total) {
  const int64_t H = xv.sizes[2], W = xv.sizes[3], C = xv.sizes[1];
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t r = i;
    const int64_t ow = r % ow_n;
    r /= ow_n;
    const int64_t oh = r % oh_n;
    r /= oh_n;
    const int64_t kw = r % kw_n;
    r /= kw_n;
    const int64_t kh = r % kh_n;
    r /= kh_n;
    const int64_t c = r % C;
    const int64_t img = r / C;
    const int64_t ih = oh * g.stride[0] - g.padding[0] + kh * g.dilation[0];
    const int64_t iw = ow * g.stride[1] - g.padding[1] + kw * g.dilation[1];
    const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
    cols[i] = inside ? x[img * xv.strides[0] + c * xv.strides[1] + ih * xv.strides[2] + iw * xv.strides[3]]
                     : convert<T>(0);
  }
}

template <typename T>
__global__ void bias_fill_kernel(const T* bias, int64_t bias_stride, int64_t cout, int64_t p, T* out, int64_t total) {
  for (int64_t i = thread_index(); i < total; i += thread_count()) out[i] = bias[(i / p) % cout * bias_stride];
}

// out[n, co, oh, ow] = bias[co] + sum over kh, kw of x[n, co / mult, ih, iw] * w[co, 0, kh, kw].
template <typename T>
__global__ void depthwise_kernel(const T* x, NdView xv, const T* w, NdView wv, const T* bias, int64_t bias_stride,
                                 T* y, NdView yv, Geometry g, int64_t mult, int64_t total) {
  using A = compute_t<T>;
  const int64_t H = xv.sizes[2], W = xv.sizes[3], kh_n = wv.sizes[2], kw_n = wv.sizes[3];
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t at[4];
    unravel(i, yv.sizes, 4, at);
    const int64_t n = at[0], co = at[1], oh = at[2], ow = at[3];
    const T* plane = x + n * xv.strides[0] + (co / mult) * xv.strides[1];
    const T* filter = w + co * wv.strides[0];
    A sum = bias != nullptr ? convert<A>(bias[co * bias_stride]) : A(0);
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const int64_t ih = oh * g.stride[0] - g.padding[0] + kh * g.dilation[0];
      if (ih < 0 || ih >= H) continue;
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const int64_t iw = ow * g.stride[1] - g.padding[1] + kw * g.dilation[1];
        if (iw < 0 || iw >= W) continue;
        sum += convert<A>(plane[ih * xv.strides[2] + iw * xv.strides[3]]) *
               convert<A>(filter[kh * wv.strides[2] + kw * wv.strides[3]]);
      }
    }
    y[offset_at(yv, at)] = convert<T>(sum);
  }
}

}  // namespace

Status conv2d_im2col(const TensorView& x, int64_t n0, int64_t count, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                     const Conv2dParams& p, void* cols) {
  const int64_t total = count * x.sizes[1] * kh * kw * oh * ow;
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &im2col_kernel<T>;
    return launch_1d(k, total, "conv2d im2col kernel", x.ptr<const T>() + n0 * x.strides[0], nd_view(x),
                     static_cast<T*>(cols), kh, kw, oh, ow, geometry(p), total);
  });
}

Status conv2d_bias_fill(const TensorView& bias, int64_t n, int64_t p, void* out) {
  const int64_t cout = bias.sizes[0], total = n * cout * p;
  return on_dtype<kCudaFloat>(bias.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &bias_fill_kernel<T>;
    return launch_1d(k, total, "conv2d bias kernel", bias.ptr<const T>(), bias.strides[0], cout, p,
                     static_cast<T*>(out), total);
  });
}

Status conv2d_depthwise(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                        const Conv2dParams& p) {
  const int64_t mult = o.sizes[1] / x.sizes[1];
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &depthwise_kernel<T>;
    return launch_1d(k, o.numel(), "conv2d depthwise kernel", x.ptr<const T>(), nd_view(x), w.ptr<const T>(),
                     nd_view(w), bias.ptr<const T>(), bias.data != nullptr ? bias.strides[0] : int64_t{0}, o.ptr<T>(),
                     nd_view(o), geometry(p), mult, o.numel());
  });
}

}  // namespace ember::cuda
