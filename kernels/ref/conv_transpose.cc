// Reference transposed convolution (ConvTransposeParams), 1-D to 3-D, in the
// gather form: with the spatial dims padded in front to three,
//   out[n, g*Cog + co, o] = bias[g*Cog + co] + sum over ci in group g, taps k of
//     x[n, g*Cig + ci, i] * w[g*Cig + ci, co, k]   where o = i*stride - pad_begin + k*dilation,
// x [N, C_in, *in], weight [C_in, C_out/groups, *kernel], bias [C_out] or none
// (data == nullptr), out [N, C_out, *out]. Any strides. Floating types
// accumulate in double, integers in uint64 (wrap-around in their own width).
#include <type_traits>

#include "kernels/ref/conv_transpose_geometry.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

template <typename T>
using acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

using Geometry = ConvTransposeGeometry;

template <typename T>
void conv_transpose_loop(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                         const Geometry& g, int64_t groups) {
  using A = acc_t<T>;
  const T* px = x.ptr<const T>();
  const T* pw = w.ptr<const T>();
  const T* pb = bias.ptr<const T>();
  T* po = o.ptr<T>();
  const int64_t cig = x.sizes[1] / groups, cog = w.sizes[1];
  auto value = [](T v) {
    if constexpr (std::is_integral_v<T>) return static_cast<A>(v);
    else return static_cast<A>(static_cast<compute_t<T>>(v));
  };
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t co = 0; co < o.sizes[1]; ++co) {
      const int64_t grp = co / cog, col = co % cog;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            A sum = pb != nullptr ? value(pb[co * bias.strides[0]]) : A(0);
            for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
              const int64_t i0 = conv_transpose_source(g, 0, o0, k0);
              if (i0 < 0) continue;
              for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                const int64_t i1 = conv_transpose_source(g, 1, o1, k1);
                if (i1 < 0) continue;
                for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                  const int64_t i2 = conv_transpose_source(g, 2, o2, k2);
                  if (i2 < 0) continue;
                  for (int64_t ci = 0; ci < cig; ++ci) {
                    const int64_t c = grp * cig + ci;
                    const T xv = px[n * x.strides[0] + c * x.strides[1] + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]];
                    const T wv = pw[c * w.strides[0] + col * w.strides[1] + k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2]];
                    sum += value(xv) * value(wv);
                  }
                }
              }
            }
            po[n * o.strides[0] + co * o.strides[1] + o0 * g.os[0] + o1 * g.os[1] + o2 * g.os[2]] =
                static_cast<T>(static_cast<compute_t<T>>(sum));
          }
        }
      }
    }
  }
}

}  // namespace

bool conv_transpose_shapes_ok(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
                              const ConvTransposeParams& p) {
  if (x.rank < 3 || x.rank > 5 || w.rank != x.rank || o.rank != x.rank || !p.valid()) return false;
  if (x.sizes[1] != w.sizes[0] || x.sizes[1] % p.groups != 0 || o.sizes[0] != x.sizes[0] ||
      o.sizes[1] != w.sizes[1] * p.groups) {
    return false;
  }
  if (bias.data != nullptr && (bias.rank != 1 || bias.sizes[0] != o.sizes[1])) return false;
  for (int i = 0; i < x.rank - 2; ++i) {
    const int64_t full = (x.sizes[2 + i] - 1) * p.stride[i] + p.dilation[i] * (w.sizes[2 + i] - 1) + 1 +
                         p.output_padding[i] - p.pad_begin[i] - p.pad_end[i];
    if (o.sizes[2 + i] != full) return false;
  }
  return true;
}

Status conv_transpose(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  EMBER_CHECK(in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const auto* p = std::get_if<ConvTransposeParams>(&params);
  EMBER_CHECK(p != nullptr, Status::InvalidArgument);
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  EMBER_CHECK(x.dtype == w.dtype && x.dtype == o.dtype && (kNumericTypes & dtype_bit(x.dtype)) &&
                         (bias.data == nullptr || bias.dtype == x.dtype),
                     Status::DTypeMismatch);
  EMBER_CHECK(conv_transpose_shapes_ok(x, w, bias, o, *p), Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  const Geometry g = conv_transpose_geometry(x, w, o, *p);
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) conv_transpose_loop<T>(x, w, bias, o, g, p->groups);
  });
  return Status::Ok;
}

}  // namespace ember::ref
