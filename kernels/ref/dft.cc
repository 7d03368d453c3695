// Reference DFT (DftParams) and STFT (StftParams), as onnx.reference computes
// them (numpy's fft, fft with n, ifft and irfft), by the direct O(n^2) sum in
// double; the angles reduced modulo the length first. Complex values are a
// last dim of 2 ([re, im]); a last dim of 1 is real. Any strides.
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// e^{sign 2 pi i k t / n}, with k t reduced modulo n.
void twiddle(int64_t k, int64_t t, int64_t n, double sign, double* c, double* s) {
  const double a = sign * kTwoPi * static_cast<double>((k * t) % n) / static_cast<double>(n);
  *c = std::cos(a);
  *s = std::sin(a);
}

template <typename T>
double read(const T* p, int64_t off) {
  return static_cast<double>(static_cast<compute_t<T>>(p[off]));
}

// One line along the axis: `in` (n points, stride si, imaginary part at +ci
// when complex) into `out` (m points, stride so, imaginary at +co when the
// output is complex).
template <typename T>
void dft_line(const T* in, int64_t n, int64_t si, bool in_complex, int64_t ci, T* out, int64_t m, int64_t so,
              bool out_complex, int64_t co, const DftParams& p) {
  using C = compute_t<T>;
  const int64_t len = p.length;
  auto re = [&](int64_t t) { return t < n ? read(in, t * si) : 0.0; };
  auto im = [&](int64_t t) { return t < n && in_complex ? read(in, t * si + ci) : 0.0; };
  if (p.inverse && p.onesided) {  // irfft: a half spectrum to `len` real points
    const int64_t half = len / 2 + 1;
    for (int64_t t = 0; t < m; ++t) {
      double acc = re(0);
      for (int64_t k = 1; k < half; ++k) {
        double c, s;
        twiddle(k, t, len, 1.0, &c, &s);
        const bool nyquist = len % 2 == 0 && k == len / 2;
        acc += nyquist ? re(k) * c : 2.0 * (re(k) * c - im(k) * s);
      }
      out[t * so] = static_cast<T>(static_cast<C>(acc / static_cast<double>(len)));
    }
    return;
  }
  const double sign = p.inverse ? 1.0 : -1.0;
  const int64_t used = n < len ? n : len;
  for (int64_t k = 0; k < m; ++k) {
    double ar = 0.0, ai = 0.0;
    for (int64_t t = 0; t < used; ++t) {
      double c, s;
      twiddle(k, t, len, sign, &c, &s);
      const double xr = re(t), xi = im(t);
      ar += xr * c - xi * s;
      ai += xr * s + xi * c;
    }
    if (p.inverse) {
      ar /= static_cast<double>(len);
      ai /= static_cast<double>(len);
    }
    out[k * so] = static_cast<T>(static_cast<C>(ar));
    if (out_complex) out[k * so + co] = static_cast<T>(static_cast<C>(ai));
  }
}

template <typename T>
void dft_loop(const TensorView& x, const TensorView& o, const DftParams& p) {
  const int axis = static_cast<int>(p.axis), last = x.rank - 1;
  // Every position of the dims other than the axis and the last one.
  int64_t outer = 1;
  for (int d = 0; d < last; ++d) {
    if (d != axis) outer *= o.sizes[d];
  }
  const T* px = x.ptr<const T>();
  T* po = o.ptr<T>();
  for (int64_t i = 0; i < outer; ++i) {
    int64_t rest = i, xoff = 0, ooff = 0;
    for (int d = last - 1; d >= 0; --d) {
      if (d == axis) continue;
      const int64_t idx = rest % o.sizes[d];
      rest /= o.sizes[d];
      xoff += idx * x.strides[d];
      ooff += idx * o.strides[d];
    }
    dft_line<T>(px + xoff, x.sizes[axis], x.strides[axis], x.sizes[last] == 2, x.strides[last], po + ooff,
                o.sizes[axis], o.strides[axis], o.sizes[last] == 2, o.strides[last], p);
  }
}

template <typename T>
void stft_loop(const TensorView& x, const TensorView& win, const TensorView& o, const StftParams& p) {
  using C = compute_t<T>;
  const T* px = x.ptr<const T>();
  const T* pw = win.ptr<const T>();
  T* po = o.ptr<T>();
  const bool complex = x.sizes[2] == 2;
  const int64_t fl = p.frame_length;
  for (int64_t b = 0; b < o.sizes[0]; ++b) {
    for (int64_t f = 0; f < o.sizes[1]; ++f) {
      for (int64_t k = 0; k < o.sizes[2]; ++k) {
        double ar = 0.0, ai = 0.0;
        for (int64_t t = 0; t < fl; ++t) {
          const int64_t pos = f * p.frame_step + t;
          if (pos >= x.sizes[1]) break;
          const int64_t off = b * x.strides[0] + pos * x.strides[1];
          const double w = read(pw, t * win.strides[0]);
          const double xr = read(px, off) * w, xi = complex ? read(px, off + x.strides[2]) * w : 0.0;
          double c, s;
          twiddle(k, t, fl, -1.0, &c, &s);
          ar += xr * c - xi * s;
          ai += xr * s + xi * c;
        }
        const int64_t ooff = b * o.strides[0] + f * o.strides[1] + k * o.strides[2];
        po[ooff] = static_cast<T>(static_cast<C>(ar));
        po[ooff + o.strides[3]] = static_cast<T>(static_cast<C>(ai));
      }
    }
  }
}

}  // namespace

Status dft(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<DftParams>(&params);
  EMBER_CHECK(p != nullptr && !in.empty() && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &o = out[0];
  EMBER_CHECK(x.dtype == o.dtype && (kFloatingTypes & dtype_bit(x.dtype)), Status::DTypeMismatch);
  const int last = x.rank - 1;
  EMBER_CHECK(x.rank >= 2 && o.rank == x.rank && p->axis >= 0 && p->axis < last && p->length >= 1,
                     Status::InvalidArgument);
  EMBER_CHECK((x.sizes[last] == 1 || x.sizes[last] == 2) && (o.sizes[last] == 1 || o.sizes[last] == 2),
                     Status::ShapeMismatch);
  for (int d = 0; d < last; ++d) {
    EMBER_CHECK(d == p->axis || o.sizes[d] == x.sizes[d], Status::ShapeMismatch);
  }
  if (o.numel() == 0) return Status::Ok;
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) dft_loop<T>(x, o, *p);
  });
  return Status::Ok;
}

Status stft(const KernelContext&, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<StftParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() >= 2 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &win = in[1], &o = out[0];
  EMBER_CHECK(x.dtype == o.dtype && win.dtype == x.dtype && (kFloatingTypes & dtype_bit(x.dtype)),
                     Status::DTypeMismatch);
  EMBER_CHECK(x.rank == 3 && (x.sizes[2] == 1 || x.sizes[2] == 2) && win.rank == 1 && o.rank == 4 &&
                         o.sizes[3] == 2 && p->frame_length >= 1 && p->frame_step >= 1,
                     Status::InvalidArgument);
  EMBER_CHECK(win.sizes[0] == p->frame_length && o.sizes[0] == x.sizes[0], Status::ShapeMismatch);
  if (o.numel() == 0) return Status::Ok;
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) stft_loop<T>(x, win, o, *p);
  });
  return Status::Ok;
}

}  // namespace ember::ref
