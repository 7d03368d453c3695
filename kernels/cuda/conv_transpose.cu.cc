// ConvTranspose (1-D to 3-D) on CUDA, in the reference's gather form
// (kernels/ref/conv_transpose.cc): one thread per output element sums, over
// the taps whose input position lands on it and the input channels of its
// group, x * w, starting from the bias; float accumulation (double for
// float64). Any strides. Floats only, as PyTorch's CUDA kernels.
// (A col2im + cuBLAS form would be faster for large channel counts.)
#include "kernels/cuda/kernel_util.h"
#include "kernels/ref/conv_transpose_geometry.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::cuda {
namespace {

// The reference's geometry plus the batch and channel strides and counts.
struct Geometry : ref::ConvTransposeGeometry {
  int64_t x0, x1, w0, w1, o0, o1;
  int64_t batch, cout, cig, cog;
};

Geometry geometry_of(const TensorView& x, const TensorView& w, const TensorView& o, const ConvTransposeParams& p) {
  Geometry g;
  static_cast<ref::ConvTransposeGeometry&>(g) = ref::conv_transpose_geometry(x, w, o, p);
  g.x0 = x.strides[0], g.x1 = x.strides[1], g.w0 = w.strides[0], g.w1 = w.strides[1];
  g.o0 = o.strides[0], g.o1 = o.strides[1];
  g.batch = o.sizes[0], g.cout = o.sizes[1], g.cig = x.sizes[1] / p.groups, g.cog = w.sizes[1];
  return g;
}

template <typename T>
__global__ void conv_transpose_kernel(const T* x, const T* w, const T* bias, int64_t bias_stride, T* y, Geometry g,
                                      int64_t total) {
  using A = compute_t<T>;
  for (int64_t i = thread_index(); i < total; i += thread_count()) {
    int64_t r = i;
    const int64_t o2 = r % g.out[2];
    r /= g.out[2];
    const int64_t o1 = r % g.out[1];
    r /= g.out[1];
    const int64_t o0 = r % g.out[0];
    r /= g.out[0];
    const int64_t co = r % g.cout, n = r / g.cout;
    const int64_t grp = co / g.cog, col = co % g.cog;
    A sum = bias != nullptr ? convert<A>(bias[co * bias_stride]) : A(0);
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t i0 = ref::conv_transpose_source(g, 0, o0, k0);
      if (i0 < 0) continue;
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
        const int64_t i1 = ref::conv_transpose_source(g, 1, o1, k1);
        if (i1 < 0) continue;
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          const int64_t i2 = ref::conv_transpose_source(g, 2, o2, k2);
          if (i2 < 0) continue;
          const T* xp = x + n * g.x0 + grp * g.cig * g.x1 + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2];
          const T* wp = w + grp * g.cig * g.w0 + col * g.w1 + k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2];
          for (int64_t ci = 0; ci < g.cig; ++ci) sum += convert<A>(xp[ci * g.x1]) * convert<A>(wp[ci * g.w0]);
        }
      }
    }
    y[n * g.o0 + co * g.o1 + o0 * g.os[0] + o1 * g.os[1] + o2 * g.os[2]] = convert<T>(sum);
  }
}

}  // namespace

EMBER_CUDA_KERNEL(conv_transpose) {
  EMBER_CHECK(in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const auto* p = std::get_if<ConvTransposeParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  EMBER_CHECK(x.dtype == w.dtype && x.dtype == o.dtype && (bias.data == nullptr || bias.dtype == x.dtype),
                     Status::DTypeMismatch);
  EMBER_CHECK(ref::conv_transpose_shapes_ok(x, w, bias, o, *p), Status::ShapeMismatch);
  return on_dtype<kCudaFloat>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* k = &conv_transpose_kernel<T>;
    return launch_1d(k, o.numel(), "conv_transpose kernel", x.ptr<const T>(), w.ptr<const T>(), bias.ptr<const T>(),
                     bias.data != nullptr ? bias.strides[0] : int64_t{0}, o.ptr<T>(), geometry_of(x, w, o, *p),
                     o.numel());
  });
}

}  // namespace ember::cuda
