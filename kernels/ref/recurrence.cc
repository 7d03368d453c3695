// Reference Recurrence (RecurrenceParams): ONNX's LSTM, GRU and RNN over the
// whole sequence, as the ONNX specification writes them (onnx.reference's
// op_lstm.py, op_gru.py, op_rnn.py), in double, one batch entry at a time:
//   LSTM  i = f(Xi + Hi + Pi c)   f = f(Xf + Hf + Pf c)   c~ = g(Xc + Hc)
//         c' = f c + i c~         o = f(Xo + Ho + Po c')  h' = o h(c')
//   GRU   z = f(Xz + Hz)  r = f(Xr + Hr)  h~ = g(Xh + (r h) Rh^T + Rbh)
//         (linear_before_reset: g(Xh + r (h Rh^T + Rbh)))   h' = (1 - z) h~ + z h
//   RNN   h' = f(Xi + Hi)
// with X* = x_t W*^T + Wb*, H* = h R*^T + Rb*, f sigmoid (RNN: tanh or relu),
// g and h tanh, gate inputs clipped to [-clip, clip] when clip > 0, and
// input_forget's f = 1 - i. A step at or past an entry's sequence length
// outputs zeros and keeps the state (ONNX Runtime's masking). Any strides.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace ember::ref {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

template <typename T>
struct Reader {
  using C = compute_t<T>;
  const TensorView& t;
  double at(int64_t a, int64_t b, int64_t c) const {
    return static_cast<double>(static_cast<C>(t.ptr<const T>()[a * t.strides[0] + b * t.strides[1] + c * t.strides[2]]));
  }
  double at(int64_t a, int64_t b) const {
    return static_cast<double>(static_cast<C>(t.ptr<const T>()[a * t.strides[0] + b * t.strides[1]]));
  }
};

int64_t length_of(const TensorView& lens, int64_t b, int64_t steps) {
  if (lens.data == nullptr) return steps;
  const int64_t at = b * lens.strides[0];
  return lens.dtype == DType::Int32 ? lens.ptr<const int32_t>()[at] : lens.ptr<const int64_t>()[at];
}

template <typename T>
void recurrence_loop(Span<const TensorView> in, Span<TensorView> out, const RecurrenceParams& p, double* ws) {
  using C = compute_t<T>;
  const TensorView &x = in[0], &lens = in[4], &h0 = in[5], &c0 = in[6], &peep = in[7];
  const Reader<T> X{x}, W{in[1]}, R{in[2]}, Bias{in[3]}, H0{h0}, C0{c0}, P{peep};
  const int64_t steps = x.sizes[0], batch = x.sizes[1], inputs = x.sizes[2], H = p.hidden, G = p.gates();
  const bool lstm = p.cell == 0, gru = p.cell == 1;
  double* h = ws;               // [B, H]
  double* c = h + batch * H;    // [B, H]
  double* xw = c + batch * H;   // [G*H]: x_t W^T + Wb
  double* hr = xw + G * H;      // [G*H]: h R^T + Rb
  double* hn = hr + G * H;      // [H]: the new h
  double* rv = hn + H;          // [H]: GRU's r
  auto clip = [&](double v) { return p.clip > 0 ? std::min(std::max(v, -p.clip), p.clip) : v; };
  auto f = [&](double v) { return p.cell == 2 ? (p.relu ? std::max(v, 0.0) : std::tanh(v)) : sigmoid(v); };
  auto put = [&](const TensorView& o, int64_t d, int64_t b, int64_t j, double v) {
    o.ptr<T>()[d * o.strides[0] + b * o.strides[1] + j * o.strides[2]] = static_cast<T>(static_cast<C>(v));
  };
  const TensorView &y = out[0], &yh = out[1], &yc = out[2];
  for (int64_t d = 0; d < p.directions; ++d) {
    const bool backward = p.reverse || d == 1;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = h0.data != nullptr ? H0.at(d, b, j) : 0.0;
        c[b * H + j] = c0.data != nullptr ? C0.at(d, b, j) : 0.0;
      }
    }
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = backward ? steps - 1 - k : k;
      for (int64_t b = 0; b < batch; ++b) {
        T* yrow = y.data == nullptr ? nullptr : y.ptr<T>() + t * y.strides[0] + d * y.strides[1] + b * y.strides[2];
        if (t >= length_of(lens, b, steps)) {
          for (int64_t j = 0; yrow != nullptr && j < H; ++j) yrow[j * y.strides[3]] = T(0);
          continue;
        }
        double* hb = h + b * H;
        double* cb = c + b * H;
        for (int64_t j = 0; j < G * H; ++j) {
          double sx = in[3].data != nullptr ? Bias.at(d, j) : 0.0;
          for (int64_t i = 0; i < inputs; ++i) sx += X.at(t, b, i) * W.at(d, j, i);
          xw[j] = sx;
          double sh = in[3].data != nullptr ? Bias.at(d, G * H + j) : 0.0;
          const bool reset_first = gru && !p.linear_before_reset && j >= 2 * H;  // needs r: below
          for (int64_t i = 0; i < H && !reset_first; ++i) sh += hb[i] * R.at(d, j, i);
          hr[j] = sh;
        }
        for (int64_t j = 0; gru && j < H; ++j) rv[j] = f(clip(xw[H + j] + hr[H + j]));
        for (int64_t j = 0; j < H; ++j) {
          if (lstm) {
            const double pi = peep.data != nullptr ? P.at(d, j) : 0.0, pf = peep.data != nullptr ? P.at(d, 2 * H + j) : 0.0;
            const double po = peep.data != nullptr ? P.at(d, H + j) : 0.0;
            const double gi = f(clip(xw[j] + hr[j] + pi * cb[j]));
            const double gf = p.input_forget ? 1.0 - gi : f(clip(xw[2 * H + j] + hr[2 * H + j] + pf * cb[j]));
            const double gc = std::tanh(clip(xw[3 * H + j] + hr[3 * H + j]));
            const double cn = gf * cb[j] + gi * gc;
            const double go = f(clip(xw[H + j] + hr[H + j] + po * cn));
            cb[j] = cn;
            hn[j] = go * std::tanh(cn);
          } else if (gru) {
            const double z = f(clip(xw[j] + hr[j]));
            double pre = xw[2 * H + j];
            if (p.linear_before_reset) {
              pre += rv[j] * hr[2 * H + j];
            } else {
              double s = hr[2 * H + j];  // Rb_h
              for (int64_t i = 0; i < H; ++i) s += rv[i] * hb[i] * R.at(d, 2 * H + j, i);
              pre += s;
            }
            const double cand = std::tanh(clip(pre));
            hn[j] = (1.0 - z) * cand + z * hb[j];
          } else {
            hn[j] = f(clip(xw[j] + hr[j]));
          }
        }
        for (int64_t j = 0; j < H; ++j) {
          hb[j] = hn[j];
          if (yrow != nullptr) yrow[j * y.strides[3]] = static_cast<T>(static_cast<C>(hn[j]));
        }
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        if (yh.data != nullptr) put(yh, d, b, j, h[b * H + j]);
        if (yc.data != nullptr) put(yc, d, b, j, c[b * H + j]);
      }
    }
  }
}

}  // namespace

bool recurrence_shapes_ok(Span<const TensorView> in, Span<const TensorView> out, const RecurrenceParams& p) {
  if (in.size() != 8 || out.size() != 3 || !p.valid()) return false;
  const TensorView &x = in[0], &w = in[1], &r = in[2], &b = in[3], &lens = in[4];
  if (x.rank != 3 || x.data == nullptr || w.data == nullptr || r.data == nullptr) return false;
  const int64_t T = x.sizes[0], B = x.sizes[1], I = x.sizes[2], D = p.directions, H = p.hidden, GH = p.gates() * H;
  auto is = [](const TensorView& t, std::initializer_list<int64_t> dims) {
    if (t.rank != static_cast<int>(dims.size())) return false;
    int k = 0;
    for (int64_t v : dims) {
      if (t.sizes[k++] != v) return false;
    }
    return true;
  };
  const DType dt = x.dtype;
  for (size_t k = 1; k < 8; ++k) {
    if (k != 4 && in[k].data != nullptr && in[k].dtype != dt) return false;
  }
  if (!is(w, {D, GH, I}) || !is(r, {D, GH, H})) return false;
  if (b.data != nullptr && !is(b, {D, 2 * GH})) return false;
  if (lens.data != nullptr && (!is(lens, {B}) || (lens.dtype != DType::Int32 && lens.dtype != DType::Int64)))
    return false;
  for (size_t k : {size_t{5}, size_t{6}}) {
    if (in[k].data != nullptr && !is(in[k], {D, B, H})) return false;
  }
  if (p.cell != 0 && (in[6].data != nullptr || in[7].data != nullptr || out[2].data != nullptr)) return false;
  if (in[7].data != nullptr && !is(in[7], {D, 3 * H})) return false;
  if (out[0].data != nullptr && (!is(out[0], {T, D, B, H}) || out[0].dtype != dt)) return false;
  for (size_t k : {size_t{1}, size_t{2}}) {
    if (out[k].data != nullptr && (!is(out[k], {D, B, H}) || out[k].dtype != dt)) return false;
  }
  return true;
}

// h and c ([B, H] each), x_t W^T and h R^T ([G*H] each), the new h and GRU's r ([H] each), in double.
size_t recurrence_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  if (p == nullptr || in.empty() || in[0].rank != 3 || !p->valid()) return 0;
  const int64_t B = in[0].sizes[1], H = p->hidden;
  return static_cast<size_t>(2 * B * H + 2 * p->gates() * H + 2 * H) * sizeof(double);
}

Status recurrence(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid(), Status::InvalidArgument);
  EMBER_CHECK(in.size() == 8 && out.size() == 3 && in[0].data != nullptr, Status::InvalidArgument);
  EMBER_CHECK(kFloatingTypes & dtype_bit(in[0].dtype), Status::DTypeMismatch);
  EMBER_CHECK(recurrence_shapes_ok(in, Span<const TensorView>(out.data(), out.size()), *p), Status::ShapeMismatch);
  auto* ws = static_cast<double*>(ctx.scratch);
  EMBER_CHECK(ws != nullptr && ctx.scratch_bytes >= recurrence_workspace(in, {}, params), Status::Internal);
  dispatch_dtype(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) recurrence_loop<T>(in, out, *p, ws);
  });
  return Status::Ok;
}

}  // namespace ember::ref
