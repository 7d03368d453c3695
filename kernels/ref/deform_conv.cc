// Reference DeformConv (DeformConvParams), as torchvision's deform_conv2d and
// onnx.reference compute it: per output position, every (input channel, tap)
// sample (bilinear over the four neighbours, those outside the image zero,
// times the mask) into a column in double (the workspace), then each output
// channel the dot product of its group's columns with its weights, plus the
// bias. Any strides.
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

// x[n, c] at (h, w) bilinearly, zero outside (torchvision's bilinear_interpolate).
template <typename C, typename T>
double bilinear(const TensorView& x, const T* plane, double h, double w) {
  const int64_t H = x.sizes[2], W = x.sizes[3];
  if (!(h > -1 && h < static_cast<double>(H) && w > -1 && w < static_cast<double>(W))) return 0.0;
  const int64_t h0 = static_cast<int64_t>(std::floor(h)), w0 = static_cast<int64_t>(std::floor(w));
  const double lh = h - static_cast<double>(h0), lw = w - static_cast<double>(w0);
  auto at = [&](int64_t r, int64_t c) {
    if (r < 0 || r >= H || c < 0 || c >= W) return 0.0;
    return static_cast<double>(static_cast<C>(plane[r * x.strides[2] + c * x.strides[3]]));
  };
  return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
         lh * lw * at(h0 + 1, w0 + 1);
}

template <typename T>
void deform_conv_loop(Span<const TensorView> in, const TensorView& o, const DeformConvParams& p, double* col) {
  using C = compute_t<T>;
  const TensorView &x = in[0], &w = in[1], &off = in[2], &bias = in[3], &mask = in[4];
  auto v = [](const TensorView& t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return static_cast<double>(static_cast<C>(
        t.ptr<const T>()[a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3]]));
  };
  const int64_t channels = x.sizes[1], kh = w.sizes[2], kw = w.sizes[3], taps = kh * kw;
  const int64_t cig = w.sizes[1], cog = o.sizes[1] / p.groups, per_og = channels / p.offset_groups;
  T* po = o.ptr<T>();
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t oy = 0; oy < o.sizes[2]; ++oy) {
      for (int64_t ox = 0; ox < o.sizes[3]; ++ox) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t g = c / per_og;
          const T* plane = x.ptr<const T>() + n * x.strides[0] + c * x.strides[1];
          for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t t = g * taps + i * kw + j;
              const double h = static_cast<double>(oy * p.stride_h - p.pad_top + i * p.dilation_h) +
                               v(off, n, 2 * t, oy, ox);
              const double ww = static_cast<double>(ox * p.stride_w - p.pad_left + j * p.dilation_w) +
                                v(off, n, 2 * t + 1, oy, ox);
              const double m = mask.data != nullptr ? v(mask, n, t, oy, ox) : 1.0;
              col[(c * kh + i) * kw + j] = m * bilinear<C>(x, plane, h, ww);
            }
          }
        }
        for (int64_t oc = 0; oc < o.sizes[1]; ++oc) {
          const int64_t first = (oc / cog) * cig;
          double sum = bias.data != nullptr
                           ? static_cast<double>(static_cast<C>(bias.ptr<const T>()[oc * bias.strides[0]]))
                           : 0.0;
          for (int64_t ci = 0; ci < cig; ++ci) {
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) sum += v(w, oc, ci, i, j) * col[((first + ci) * kh + i) * kw + j];
            }
          }
          po[n * o.strides[0] + oc * o.strides[1] + oy * o.strides[2] + ox * o.strides[3]] =
              static_cast<T>(static_cast<C>(sum));
        }
      }
    }
  }
}

bool deform_conv_shapes_ok(Span<const TensorView> in, const TensorView& o, const DeformConvParams& p) {
  const TensorView &x = in[0], &w = in[1], &off = in[2], &bias = in[3], &mask = in[4];
  if (x.rank != 4 || w.rank != 4 || off.rank != 4 || o.rank != 4) return false;
  const int64_t taps = w.sizes[2] * w.sizes[3], og = p.offset_groups;
  if (x.sizes[1] != w.sizes[1] * p.groups || w.sizes[0] % p.groups != 0 || x.sizes[1] % og != 0) return false;
  const int64_t want[4] = {x.sizes[0], w.sizes[0], p.out_h(x.sizes[2], w.sizes[2]), p.out_w(x.sizes[3], w.sizes[3])};
  for (int d = 0; d < 4; ++d) {
    if (o.sizes[d] != want[d]) return false;
  }
  if (off.sizes[0] != want[0] || off.sizes[1] != og * taps * 2 || off.sizes[2] != want[2] || off.sizes[3] != want[3])
    return false;
  if (bias.data != nullptr && (bias.rank != 1 || bias.sizes[0] != want[1])) return false;
  return mask.data == nullptr || (mask.rank == 4 && mask.sizes[0] == want[0] && mask.sizes[1] == og * taps &&
                                  mask.sizes[2] == want[2] && mask.sizes[3] == want[3]);
}

}  // namespace

// One column: C * kh * kw doubles.
size_t deform_conv_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams&) {
  if (in.size() < 2 || in[0].rank != 4 || in[1].rank != 4) return 0;
  return static_cast<size_t>(in[0].sizes[1] * in[1].sizes[2] * in[1].sizes[3]) * sizeof(double);
}

Status deform_conv(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                   const OpParams& params) {
  const auto* p = std::get_if<DeformConvParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 5 && out.size() == 1, Status::InvalidArgument);
  const TensorView& o = out[0];
  for (size_t k = 0; k < in.size(); ++k) {
    EMBER_CHECK(in[k].data == nullptr ? k >= 3 : in[k].dtype == o.dtype, Status::DTypeMismatch);
  }
  EMBER_CHECK(kFloatingTypes & dtype_bit(o.dtype), Status::DTypeMismatch);
  EMBER_CHECK(deform_conv_shapes_ok(in, o, *p), Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  auto* col = static_cast<double*>(ctx.scratch);
  EMBER_CHECK(col != nullptr && ctx.scratch_bytes >= deform_conv_workspace(in, {}, params), Status::Internal);
  dispatch_dtype(o.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) deform_conv_loop<T>(in, o, *p, col);
  });
  return Status::Ok;
}

}  // namespace ember::ref
