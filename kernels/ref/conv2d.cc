// Reference direct 2-D convolution (cross-correlation, as PyTorch):
//   out[n, co, oh, ow] = bias[co] + sum over ci in co's group, kh, kw of
//     x[n, g*Cg + ci, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[co, ci, kh, kw]
// Inputs x [N, C, H, W], weight [Cout, C/groups, KH, KW], bias [Cout] or none
// (data == nullptr); out [N, Cout, OH, OW]. Every view may have any strides,
// so channels_last tensors work as they are. Floating types accumulate in
// double, integers in uint64 (wrap-around as in their own width), bfloat16 as
// PyTorch 1.13's slow_conv2d on contiguous input (im2col, then a gemm that
// starts from the bias): each product rounded to bfloat16, then added in
// (ci, kh, kw) order and rounded again.
#include <type_traits>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename T>
using conv_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <typename T>
void conv2d_loop(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                 const Conv2dParams& p) {
  using A = conv_acc_t<T>;
  const T* px = x.ptr<const T>();
  const T* pw = w.ptr<const T>();
  const T* pb = bias.ptr<const T>();
  T* po = o.ptr<T>();
  const int64_t batch = o.sizes[0], cout = o.sizes[1], oh_n = o.sizes[2], ow_n = o.sizes[3];
  const int64_t h = x.sizes[2], wd = x.sizes[3];
  const int64_t cg = w.sizes[1], kh_n = w.sizes[2], kw_n = w.sizes[3];
  const int64_t cout_g = cout / p.groups;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t co = 0; co < cout; ++co) {
      const int64_t g = co / cout_g;
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          A sum = pb != nullptr ? static_cast<A>(pb[co * bias.strides[0]]) : A(0);
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = g * cg + ci;
            for (int64_t kh = 0; kh < kh_n; ++kh) {
              const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
              if (ih < 0 || ih >= h) continue;
              for (int64_t kw = 0; kw < kw_n; ++kw) {
                const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (iw < 0 || iw >= wd) continue;
                const T xv = px[n * x.strides[0] + c * x.strides[1] + ih * x.strides[2] + iw * x.strides[3]];
                const T wv = pw[co * w.strides[0] + ci * w.strides[1] + kh * w.strides[2] + kw * w.strides[3]];
                if constexpr (std::is_integral_v<T>) {
                  sum += static_cast<A>(xv) * static_cast<A>(wv);
                } else if constexpr (std::is_same_v<T, BFloat16>) {  // sum holds a bfloat16 value
                  const float product = static_cast<float>(T(static_cast<float>(xv) * static_cast<float>(wv)));
                  sum = static_cast<A>(static_cast<float>(T(static_cast<float>(sum) + product)));
                } else {
                  sum += static_cast<A>(static_cast<compute_t<T>>(xv)) * static_cast<A>(static_cast<compute_t<T>>(wv));
                }
              }
            }
          }
          po[n * o.strides[0] + co * o.strides[1] + oh * o.strides[2] + ow * o.strides[3]] =
              static_cast<T>(static_cast<compute_t<T>>(sum));
        }
      }
    }
  }
}

}  // namespace

Status conv2d(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const Conv2dParams* p = std::get_if<Conv2dParams>(&params);
  EMBER_TRY(check_conv2d_args(in, out, p, kNumericTypes));
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) conv2d_loop<T>(x, w, bias, o, *p);
  });
  return Status::Ok;
}

}  // namespace ember::ref
