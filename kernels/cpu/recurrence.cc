// float32 Recurrence (ONNX LSTM, GRU, RNN; kernels/ref/recurrence.cc has the
// formulas). For every direction at once, one blocked GEMM gives every step's
// input part
//   xw [T*B, D*G*H] = x [T*B, I] @ W^T + Wb (+ Rb where it is additive)
// then each step is one product of the state with R (B <= 64 rows: sgemm's
// unpacked dot-product path, which reads R in place; R^T transposed per call
// for the row-axpy path was slower at batch 1, the transpose included) and a
// vector loop over the gates. GRU without linear_before_reset takes a second product per step,
// (r h) R_h^T. The GEMMs thread inside; the gate loops run over the batch
// entries in parallel when there is enough of them. Operands that are not
// contiguous use the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Plan {
  int64_t T = 0, B = 0, I = 0, D = 1, H = 0, G = 1;
  int64_t GH = 0, DGH = 0;
  int64_t r_rows = 0;  // rows of R in the per-step product (GRU without linear_before_reset: z, r only)
  size_t xw = 0, bias = 0, hr = 0, state = 0, zeros = 0, gemm = 0;
};

Plan plan_for(const TensorView& x, const RecurrenceParams& p, int threads) {
  Plan pl;
  pl.T = x.sizes[0], pl.B = x.sizes[1], pl.I = x.sizes[2], pl.D = p.directions, pl.H = p.hidden, pl.G = p.gates();
  pl.GH = pl.G * pl.H, pl.DGH = pl.D * pl.GH;
  const bool reset_apart = p.cell == 1 && !p.linear_before_reset;
  pl.r_rows = reset_apart ? 2 * pl.H : pl.GH;
  pl.xw = aligned(static_cast<size_t>(pl.T * pl.B * pl.DGH) * sizeof(float));
  pl.bias = aligned(static_cast<size_t>(pl.DGH + pl.GH) * sizeof(float));  // x's bias, then the per-step one
  pl.hr = aligned(static_cast<size_t>(pl.B * pl.GH) * sizeof(float));
  pl.state = aligned(static_cast<size_t>(pl.B * pl.H) * sizeof(float));  // h, c, r h: three of them
  pl.zeros = aligned(static_cast<size_t>(3 * pl.H) * sizeof(float));
  const int t = std::max(1, threads);
  pl.gemm = aligned(std::max({sgemm_workspace(pl.T * pl.B, pl.DGH, pl.I, t), sgemm_workspace(pl.B, pl.r_rows, pl.H, t),
                              sgemm_workspace(pl.B, pl.H, pl.H, t)}));
  return pl;
}

size_t workspace_of(const Plan& p) { return kAlign + p.xw + p.bias + p.hr + 3 * p.state + p.zeros + p.gemm; }

bool usable(Span<const TensorView> in, Span<const TensorView> out) {
  if (in[0].dtype != DType::Float32) return false;
  for (const TensorView& t : in) {
    if (t.data != nullptr && !t.is_contiguous()) return false;
  }
  for (const TensorView& t : out) {
    if (t.data != nullptr && !t.is_contiguous()) return false;
  }
  return true;
}

inline float sigmoid(float v) { return 1.0f / (1.0f + fast_exp(-v)); }
inline float clip(float v, float c) {
  const float lo = v < -c ? -c : v;
  return lo > c ? c : lo;
}

// One LSTM step of one batch entry: gates i, o, f, c of xw (bias included) and
// hr, peepholes pi, po, pf (zeros when absent); h and c updated in place, y
// the output row (may alias nothing). clip: +inf for none. The flags are
// template arguments: a select on a run-time bool keeps GCC from vectorizing.
template <bool input_forget>
RT_SIMD_CLONES void lstm_cell(int64_t n, const float* __restrict xw, const float* __restrict hr,
                              const float* __restrict pi, const float* __restrict po, const float* __restrict pf,
                              float* __restrict h, float* __restrict c, float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float i = sigmoid(clip(xw[j] + hr[j] + pi[j] * c[j], cl));
    const float fo = sigmoid(clip(xw[2 * n + j] + hr[2 * n + j] + pf[j] * c[j], cl));
    const float f = input_forget ? 1.0f - i : fo;
    const float g = fast_tanh(clip(xw[3 * n + j] + hr[3 * n + j], cl));
    const float cn = f * c[j] + i * g;
    const float o = sigmoid(clip(xw[n + j] + hr[n + j] + po[j] * cn, cl));
    const float hn = o * fast_tanh(cn);
    c[j] = cn;
    h[j] = hn;
    y[j] = hn;
  }
}

// GRU's z and r of one batch entry: zr holds their h R^T parts and gets them activated.
RT_SIMD_CLONES void gru_gates(int64_t n, const float* __restrict xw, float* __restrict zr, float cl) {
  for (int64_t j = 0; j < 2 * n; ++j) zr[j] = sigmoid(clip(xw[j] + zr[j], cl));
}

// GRU's new h of one batch entry: zr as gru_gates left it, hh the candidate's
// hidden part (linear_before_reset: h R_h^T, multiplied by r here plus rb_h;
// else (r h) R_h^T, with Rb_h in xw's bias and rb_h zeros).
template <bool before_reset>
RT_SIMD_CLONES void gru_cell(int64_t n, const float* __restrict xw, const float* __restrict zr,
                             const float* __restrict hh, const float* __restrict rb_h, float* __restrict h,
                             float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float z = zr[j], r = zr[n + j];
    const float hidden = before_reset ? r * (hh[j] + rb_h[j]) : hh[j];
    const float cand = fast_tanh(clip(xw[2 * n + j] + hidden, cl));
    const float hn = cand + z * (h[j] - cand);
    h[j] = hn;
    y[j] = hn;
  }
}

template <bool relu>
RT_SIMD_CLONES void rnn_cell(int64_t n, const float* __restrict xw, const float* __restrict hr, float* __restrict h,
                             float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float v = clip(xw[j] + hr[j], cl);
    const float r = v > 0.0f ? v : 0.0f;
    const float hn = relu ? r : fast_tanh(v);
    h[j] = hn;
    y[j] = hn;
  }
}

}  // namespace

size_t recurrence_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  if (p == nullptr || in.size() != 8 || out.size() != 3 || !ref::recurrence_shapes_ok(in, out, *p)) return 0;
  if (!usable(in, out)) return ref::recurrence_workspace(in, out, params);
  return workspace_of(plan_for(in[0], *p, get_num_threads()));
}

Status recurrence_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  RT_CHECK_OR_RETURN(p != nullptr && p->valid() && in.size() == 8 && out.size() == 3, Status::InvalidArgument);
  const Span<const TensorView> outs(out.data(), out.size());
  if (!ref::recurrence_shapes_ok(in, outs, *p) || !usable(in, outs)) return ref::recurrence(ctx, in, out, params);
  const Plan pl = plan_for(in[0], *p, ctx.num_threads);
  RT_CHECK_OR_RETURN(ctx.scratch != nullptr && ctx.scratch_bytes >= workspace_of(pl), Status::Internal);
  const int64_t T = pl.T, B = pl.B, I = pl.I, H = pl.H, GH = pl.GH, DGH = pl.DGH;
  if (B == 0) return Status::Ok;  // every output is empty
  char* at = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign);
  auto take = [&](size_t bytes) {
    float* f = reinterpret_cast<float*>(at);
    at += bytes;
    return f;
  };
  float* xw = take(pl.xw);
  float* bias = take(pl.bias);  // [D*G*H] for x's GEMM, then [G*H]: GRU's rb_h (linear_before_reset)
  float* hr = take(pl.hr);
  float* h = take(pl.state);
  float* c = take(pl.state);
  float* rh = take(pl.state);  // GRU: r h; without Y: where the step's rows go (after r h is used)
  float* zeros = take(pl.zeros);
  void* gemm_ws = at;
  const bool lstm = p->cell == 0, gru = p->cell == 1, before_reset = gru && p->linear_before_reset;
  const float cl = p->clip > 0 ? static_cast<float>(p->clip) : INFINITY;
  const float* pb = in[3].ptr<const float>();
  std::fill(zeros, zeros + 3 * H, 0.0f);
  // x's bias: Wb + Rb, but GRU's Rb_h when it is multiplied by r.
  for (int64_t d = 0; d < pl.D; ++d) {
    for (int64_t j = 0; j < GH; ++j) {
      const bool rb_apart = before_reset && j >= 2 * H;
      bias[d * GH + j] = pb == nullptr ? 0.0f : pb[d * 2 * GH + j] + (rb_apart ? 0.0f : pb[d * 2 * GH + GH + j]);
    }
  }
  GemmEpilogue ep;
  ep.col_bias = bias;
  if (T * B > 0 &&
      !sgemm_linear(T * B, DGH, I, GemmOperand{MatrixRef<const float>{in[0].ptr<const float>(), I, 1}},
                    GemmOperand{MatrixRef<const float>{in[1].ptr<const float>(), 1, I}},
                    MatrixRef<float>{xw, DGH, 1}, ep, gemm_ws, pl.gemm, ctx.num_threads)) {
    return Status::OutOfMemory;
  }
  float* rb_h = bias + DGH;
  const TensorView& lens = in[4];
  auto length = [&](int64_t b) -> int64_t {
    if (lens.data == nullptr) return T;
    return lens.dtype == DType::Int32 ? lens.ptr<const int32_t>()[b] : lens.ptr<const int64_t>()[b];
  };
  const TensorView &y = out[0], &yh = out[1], &yc = out[2];
  const int64_t grain = std::max<int64_t>(1, 4096 / H);
  for (int64_t d = 0; d < pl.D; ++d) {
    const bool backward = p->reverse || d == 1;
    const float* r = in[2].ptr<const float>() + d * GH * H;
    // Rows j0... of R as the product's B = R^T.
    auto r_rows = [&](int64_t j0) { return MatrixRef<const float>{r + j0 * H, 1, H}; };
    const float* peep = in[7].data != nullptr ? in[7].ptr<const float>() + d * 3 * H : zeros;
    if (before_reset) {
      for (int64_t j = 0; j < H; ++j) rb_h[j] = pb == nullptr ? 0.0f : pb[d * 2 * GH + GH + 2 * H + j];
    }
    if (in[5].data != nullptr) {
      std::memcpy(h, in[5].ptr<const float>() + d * B * H, static_cast<size_t>(B * H) * sizeof(float));
    } else {
      std::fill(h, h + B * H, 0.0f);
    }
    if (in[6].data != nullptr) {
      std::memcpy(c, in[6].ptr<const float>() + d * B * H, static_cast<size_t>(B * H) * sizeof(float));
    } else {
      std::fill(c, c + B * H, 0.0f);
    }
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = backward ? T - 1 - k : k;
      // hr [B, r_rows] = h @ R[:r_rows]^T
      if (!sgemm(B, pl.r_rows, H, MatrixRef<const float>{h, H, 1}, r_rows(0),
                 MatrixRef<float>{hr, GH, 1}, false, gemm_ws, pl.gemm, ctx.num_threads)) {
        return Status::OutOfMemory;
      }
      const float* xw_t = xw + t * B * DGH + d * GH;
      float* y_t = y.data != nullptr ? y.ptr<float>() + (t * pl.D + d) * B * H : nullptr;
      auto row_out = [&](int64_t b) { return y_t != nullptr ? y_t + b * H : rh + b * H; };
      auto masked = [&](int64_t b) {
        if (t < length(b)) return false;
        if (y_t != nullptr) std::fill(y_t + b * H, y_t + (b + 1) * H, 0.0f);
        return true;
      };
      if (lstm) {
        parallel_for(0, B, grain, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (masked(b)) continue;
            (p->input_forget ? lstm_cell<true> : lstm_cell<false>)(H, xw_t + b * DGH, hr + b * GH, peep, peep + H,
                                                                   peep + 2 * H, h + b * H, c + b * H, row_out(b), cl);
          }
        });
      } else if (p->cell == 2) {
        parallel_for(0, B, grain, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (!masked(b)) (p->relu ? rnn_cell<true> : rnn_cell<false>)(H, xw_t + b * DGH, hr + b * GH, h + b * H, row_out(b), cl);
          }
        });
      } else {
        // z and r into hr's first 2H columns (in place), then the candidate.
        for (int64_t b = 0; b < B; ++b) gru_gates(H, xw_t + b * DGH, hr + b * GH, cl);
        const float* hh = hr + 2 * H;  // linear_before_reset: h R_h^T from the product above
        if (!before_reset) {
          for (int64_t b = 0; b < B; ++b) {
            for (int64_t j = 0; j < H; ++j) rh[b * H + j] = hr[b * GH + H + j] * h[b * H + j];
          }
          // (r h) R_h^T into hr's last H columns
          if (!sgemm(B, H, H, MatrixRef<const float>{rh, H, 1}, r_rows(2 * H),
                     MatrixRef<float>{hr + 2 * H, GH, 1}, false, gemm_ws, pl.gemm, ctx.num_threads)) {
            return Status::OutOfMemory;
          }
        }
        for (int64_t b = 0; b < B; ++b) {
          if (masked(b)) continue;
          (before_reset ? gru_cell<true> : gru_cell<false>)(H, xw_t + b * DGH, hr + b * GH, hh + b * GH,
                                                            before_reset ? rb_h : zeros, h + b * H, row_out(b), cl);
        }
      }
    }
    if (yh.data != nullptr) std::memcpy(yh.ptr<float>() + d * B * H, h, static_cast<size_t>(B * H) * sizeof(float));
    if (yc.data != nullptr) std::memcpy(yc.ptr<float>() + d * B * H, c, static_cast<size_t>(B * H) * sizeof(float));
  }
  return Status::Ok;
}

}  // namespace ember::cpu
