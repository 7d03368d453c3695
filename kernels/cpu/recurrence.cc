// float32 Recurrence (ONNX LSTM, GRU, RNN; kernels/ref/recurrence.cc has the
// formulas). For every direction at once, one blocked GEMM gives every step's
// input part
//   xw [T*B, D*G*H] = x [T*B, I] @ W^T + Wb (+ Rb where it is additive)
// then each step, per chunk of hidden units (one chunk per thread, in one
// parallel region), is the product of the previous state with R's rows of
// those units' gates, then the gate loop of those units. The state is double
// buffered: a step reads all of h while its chunks write their part of the
// next one. GRU without linear_before_reset needs all of r h before its
// second product, (r h) R_h^T: a second region per step.
// The products take sgemm's unpacked paths up to 64 rows, which read R where
// it lies: at batch 1 the dot products with R's rows (axpy over R^T's rows is
// slower there: R streams from L2 either way), at batch 2 to 8 the row axpy
// path on R^T, transposed once per direction (111 against 76 GFLOP/s at batch
// 8, hidden 128), from 9 rows the dot products again; from 65 rows the
// blocked kernel, with a workspace per chunk. Operands that are not
// contiguous use the reference kernel.
#include <algorithm>
#include <atomic>
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
  int64_t chunks = 1;       // of hidden units per step: one per thread
  bool transposed = false;  // the step's products read R^T [H, G*H] (batch 2 to 8: sgemm's axpy path)
  size_t xw = 0, bias = 0, hr = 0, state = 0, zeros = 0, rt = 0, gemm = 0, step_gemm = 0;
};

Plan plan_for(const TensorView& x, const RecurrenceParams& p, int threads) {
  Plan pl;
  pl.T = x.sizes[0], pl.B = x.sizes[1], pl.I = x.sizes[2], pl.D = p.directions, pl.H = p.hidden, pl.G = p.gates();
  pl.GH = pl.G * pl.H, pl.DGH = pl.D * pl.GH;
  // A chunk of at least 16 units, and a step worth a parallel region (about 2^15 multiply-adds a thread).
  const int64_t useful = std::max<int64_t>(1, pl.B * pl.GH * pl.H >> 15);
  pl.chunks = std::clamp<int64_t>(std::min<int64_t>(threads, useful), 1, std::max<int64_t>(1, pl.H / 16));
  pl.xw = aligned(static_cast<size_t>(pl.T * pl.B * pl.DGH) * sizeof(float));
  pl.bias = aligned(static_cast<size_t>(pl.DGH + pl.GH) * sizeof(float));  // x's bias, then the per-step one
  pl.hr = aligned(static_cast<size_t>(pl.B * pl.GH) * sizeof(float));
  pl.state = aligned(static_cast<size_t>(pl.B * pl.H) * sizeof(float));  // h twice, c, r h, a sink for Y
  pl.zeros = aligned(static_cast<size_t>(3 * pl.H) * sizeof(float));
  pl.transposed = pl.B >= 2 && pl.B <= 8;
  pl.rt = pl.transposed ? aligned(static_cast<size_t>(pl.H * pl.GH) * sizeof(float)) : 0;
  pl.step_gemm = aligned(sgemm_workspace(pl.B, pl.H, pl.H, 1));
  pl.gemm = std::max(aligned(sgemm_workspace(pl.T * pl.B, pl.DGH, pl.I, std::max(1, threads))),
                     static_cast<size_t>(pl.chunks) * pl.step_gemm);
  return pl;
}

size_t workspace_of(const Plan& p) { return kAlign + p.xw + p.bias + p.hr + 5 * p.state + p.zeros + p.rt + p.gemm; }

// rt [cols, rows] = r [rows, cols]^T, 16 rows of r at a time.
void transpose(const float* r, int64_t rows, int64_t cols, float* rt) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int64_t i1 = std::min(rows, i0 + 16);
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t i = i0; i < i1; ++i) rt[j * rows + i] = r[i * cols + j];
    }
  }
}

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

// Every step's input part, xw = x @ W^T + bias (bias: Wb + Rb, but GRU's Rb_h
// when it is multiplied by r; written to `bias`, D*G*H values). The blocked
// kernel even for few rows: its packing pays at every T * B of a real
// sequence (64 x 64 x 512: 40 us, the unpacked dot path 70). False when the
// workspace is too small.
bool input_part(const Plan& pl, Span<const TensorView> in, bool before_reset, float* bias, float* xw, void* ws,
                int threads) {
  const float* pb = in[3].ptr<const float>();
  for (int64_t d = 0; d < pl.D; ++d) {
    for (int64_t j = 0; j < pl.GH; ++j) {
      const bool rb_apart = before_reset && j >= 2 * pl.H;
      bias[d * pl.GH + j] =
          pb == nullptr ? 0.0f : pb[d * 2 * pl.GH + j] + (rb_apart ? 0.0f : pb[d * 2 * pl.GH + pl.GH + j]);
    }
  }
  if (pl.T * pl.B == 0) return true;
  GemmEpilogue ep;
  ep.col_bias = bias;
  return sgemm_fused(pl.T * pl.B, pl.DGH, pl.I, GemmOperand{MatrixRef<const float>{in[0].ptr<const float>(), pl.I, 1}},
                     GemmOperand{MatrixRef<const float>{in[1].ptr<const float>(), 1, pl.I}},
                     MatrixRef<float>{xw, pl.DGH, 1}, ep, ws, pl.gemm, threads);
}

inline float clip(float v, float c) {
  const float lo = v < -c ? -c : v;
  return lo > c ? c : lo;
}

// The cells below update n hidden units of one batch entry. A gate's values
// start `s` floats after the previous gate's in xw (bias included) and hr (the
// state's product with R); h / c are the state before the step, hn / cn after
// it, y the output row (never aliased). clip: +inf for none. The flags are
// template arguments: a select on a run-time bool keeps GCC from vectorizing.

// LSTM: gates i, o, f, c; peepholes pi, po, pf (zeros when absent); c in place.
template <bool input_forget>
RT_SIMD_CLONES void lstm_cell(int64_t n, int64_t s, const float* __restrict xw, const float* __restrict hr,
                              const float* __restrict pi, const float* __restrict po, const float* __restrict pf,
                              float* __restrict c, float* __restrict hn, float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float i = rational_sigmoid(clip(xw[j] + hr[j] + pi[j] * c[j], cl));
    const float fo = rational_sigmoid(clip(xw[2 * s + j] + hr[2 * s + j] + pf[j] * c[j], cl));
    const float f = input_forget ? 1.0f - i : fo;
    const float g = rational_tanh(clip(xw[3 * s + j] + hr[3 * s + j], cl));
    const float cn = f * c[j] + i * g;
    const float o = rational_sigmoid(clip(xw[s + j] + hr[s + j] + po[j] * cn, cl));
    const float v = o * rational_tanh(cn);
    c[j] = cn;
    hn[j] = v;
    y[j] = v;
  }
}

// GRU's z and r: zr holds their h R^T parts and gets them activated.
RT_SIMD_CLONES void gru_gates(int64_t n, int64_t s, const float* __restrict xw, float* __restrict zr, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    zr[j] = rational_sigmoid(clip(xw[j] + zr[j], cl));
    zr[s + j] = rational_sigmoid(clip(xw[s + j] + zr[s + j], cl));
  }
}

// GRU's new h: zr as gru_gates left it, hh the candidate's hidden part
// (linear_before_reset: h R_h^T, multiplied by r here plus rb_h; else
// (r h) R_h^T, with Rb_h in xw's bias and rb_h zeros).
template <bool before_reset>
RT_SIMD_CLONES void gru_cell(int64_t n, int64_t s, const float* __restrict xw, const float* __restrict zr,
                             const float* __restrict hh, const float* __restrict rb_h, const float* __restrict h,
                             float* __restrict hn, float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float z = zr[j], r = zr[s + j];
    const float hidden = before_reset ? r * (hh[j] + rb_h[j]) : hh[j];
    const float cand = rational_tanh(clip(xw[2 * s + j] + hidden, cl));
    const float v = cand + z * (h[j] - cand);
    hn[j] = v;
    y[j] = v;
  }
}

template <bool relu>
RT_SIMD_CLONES void rnn_cell(int64_t n, const float* __restrict xw, const float* __restrict hr, float* __restrict hn,
                             float* __restrict y, float cl) {
  for (int64_t j = 0; j < n; ++j) {
    const float v = clip(xw[j] + hr[j], cl);
    const float r = v > 0.0f ? v : 0.0f;
    const float out = relu ? r : rational_tanh(v);
    hn[j] = out;
    y[j] = out;
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
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 8 && out.size() == 3, Status::InvalidArgument);
  const Span<const TensorView> outs(out.data(), out.size());
  if (!ref::recurrence_shapes_ok(in, outs, *p) || !usable(in, outs)) return ref::recurrence(ctx, in, out, params);
  const Plan pl = plan_for(in[0], *p, ctx.num_threads);
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= workspace_of(pl), Status::Internal);
  const int64_t T = pl.T, B = pl.B, H = pl.H, GH = pl.GH, DGH = pl.DGH;
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
  float* h_next = take(pl.state);
  float* c = take(pl.state);
  float* rh = take(pl.state);    // GRU without linear_before_reset: r h
  float* sink = take(pl.state);  // the step's rows when there is no Y
  float* zeros = take(pl.zeros);
  float* rt = take(pl.rt);
  char* gemm_ws = at;
  const bool lstm = p->cell == 0, gru = p->cell == 1, before_reset = gru && p->linear_before_reset;
  const bool reset_apart = gru && !before_reset;
  const float cl = p->clip > 0 ? static_cast<float>(p->clip) : INFINITY;
  const float* pb = in[3].ptr<const float>();
  std::fill(zeros, zeros + 3 * H, 0.0f);
  if (!input_part(pl, in, before_reset, bias, xw, gemm_ws, ctx.num_threads)) return Status::OutOfMemory;
  float* rb_h = bias + DGH;
  const TensorView& lens = in[4];
  auto length = [&](int64_t b) -> int64_t {
    if (lens.data == nullptr) return T;
    return lens.dtype == DType::Int32 ? lens.ptr<const int32_t>()[b] : lens.ptr<const int64_t>()[b];
  };
  // Chunk i's hidden units [unit(i), unit(i + 1)): multiples of 16 but the last.
  auto unit = [&](int64_t i) { return i == pl.chunks ? H : (H * i / pl.chunks + 8) / 16 * 16; };
  std::atomic<bool> ok{true};
  // Runs step(u0, u1, workspace) on every chunk, in one parallel region when there are several.
  auto each_chunk = [&](auto&& step) {
    auto run = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) step(unit(i), unit(i + 1), gemm_ws + i * pl.step_gemm);
    };
    if (pl.chunks > 1) {
      parallel_for(0, pl.chunks, 1, run);
    } else {
      run(0, 1);
    }
  };
  const TensorView &y = out[0], &yh = out[1], &yc = out[2];
  for (int64_t d = 0; d < pl.D; ++d) {
    const bool backward = p->reverse || d == 1;
    const float* r = in[2].ptr<const float>() + d * GH * H;
    if (pl.transposed) transpose(r, GH, H, rt);
    // hr's columns [j0, j0 + n) (gate j0 / H) = a @ R[j0 : j0 + n]^T, on this thread.
    auto product = [&](const float* a, int64_t j0, int64_t n, void* ws) {
      const MatrixRef<const float> rj =
          pl.transposed ? MatrixRef<const float>{rt + j0, GH, 1} : MatrixRef<const float>{r + j0 * H, 1, H};
      if (!sgemm(B, n, H, MatrixRef<const float>{a, H, 1}, rj, MatrixRef<float>{hr + j0, GH, 1}, false, ws,
                 pl.step_gemm, 1))
        ok = false;
    };
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
      const float* xw_t = xw + t * B * DGH + d * GH;
      float* y_t = y.data != nullptr ? y.ptr<float>() + (t * pl.D + d) * B * H : nullptr;
      float* y_rows = y_t != nullptr ? y_t : sink;
      // Units [u0, u1) of entry b past its length: zero output, the state kept.
      auto masked = [&](int64_t b, int64_t u0, int64_t u1) {
        if (t < length(b)) return false;
        std::fill(y_rows + b * H + u0, y_rows + b * H + u1, 0.0f);
        std::copy(h + b * H + u0, h + b * H + u1, h_next + b * H + u0);
        return true;
      };
      if (reset_apart) {  // z, r and r h of every unit first: the candidate's product reads all of r h
        each_chunk([&](int64_t u0, int64_t u1, void* ws) {
          product(h, u0, u1 - u0, ws);
          product(h, H + u0, u1 - u0, ws);
          for (int64_t b = 0; b < B; ++b) {
            float* zr = hr + b * GH + u0;
            gru_gates(u1 - u0, H, xw_t + b * DGH + u0, zr, cl);
            for (int64_t j = 0; j < u1 - u0; ++j) rh[b * H + u0 + j] = zr[H + j] * h[b * H + u0 + j];
          }
        });
      }
      each_chunk([&](int64_t u0, int64_t u1, void* ws) {
        const int64_t n = u1 - u0;
        if (reset_apart) {
          product(rh, 2 * H + u0, n, ws);
        } else {
          for (int64_t g = 0; g < pl.G; ++g) product(h, g * H + u0, n, ws);
        }
        for (int64_t b = 0; b < B; ++b) {
          if (masked(b, u0, u1)) continue;
          const float* xb = xw_t + b * DGH + u0;
          float* hrb = hr + b * GH + u0;
          float* hn = h_next + b * H + u0;
          float* yb = y_rows + b * H + u0;
          if (lstm) {
            (p->input_forget ? lstm_cell<true> : lstm_cell<false>)(n, H, xb, hrb, peep + u0, peep + H + u0,
                                                                   peep + 2 * H + u0, c + b * H + u0, hn, yb, cl);
          } else if (!gru) {
            (p->relu ? rnn_cell<true> : rnn_cell<false>)(n, xb, hrb, hn, yb, cl);
          } else {
            if (before_reset) gru_gates(n, H, xb, hrb, cl);
            (before_reset ? gru_cell<true> : gru_cell<false>)(n, H, xb, hrb, hrb + 2 * H,
                                                              before_reset ? rb_h + u0 : zeros, h + b * H + u0, hn,
                                                              yb, cl);
          }
        }
      });
      if (!ok) return Status::OutOfMemory;
      std::swap(h, h_next);
    }
    if (yh.data != nullptr) std::memcpy(yh.ptr<float>() + d * B * H, h, static_cast<size_t>(B * H) * sizeof(float));
    if (yc.data != nullptr) std::memcpy(yc.ptr<float>() + d * B * H, c, static_cast<size_t>(B * H) * sizeof(float));
  }
  return Status::Ok;
}

}  // namespace ember::cpu
