// float32 ConvTranspose (1-D to 3-D) as the blocked GEMM (gemm.h) plus col2im,
// per image and group, the spatial dims padded in front to three:
//   col (Cout/g*K x In) = weight[g]^T (Cout/g*K x Cin/g) @ x[n, g] (Cin/g x In)
// (K the kernel's taps, In the input's positions), then every column entry is
// added to the output position its tap lands on (threads over the output
// channels: each writes its own planes). The GEMM threads inside. A depthwise
// one (one input and one output channel per group) skips the GEMM: each tap
// adds the input plane times its weight, threads over the groups. Inputs
// whose positions do not flatten (x, weight, output not contiguous past the
// channel dim) use the reference kernel.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Plan {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  int64_t cig = 0, cog = 0, taps = 1, in_size = 1, out_size = 1, groups = 1;
  bool depthwise = false;  // one input and one output channel per group: no GEMM, no workspace
  size_t col_bytes = 0, gemm_bytes = 0;
};

// Positions past the channel dim are one contiguous run.
bool flat_past_channels(const TensorView& t) {
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 2; --d) {
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

Plan plan_for(const TensorView& x, const TensorView& w, const TensorView& o, const ConvTransposeParams& p,
              int threads) {
  Plan pl;
  const int nsp = x.rank - 2;
  for (int i = 0; i < nsp; ++i) {
    const int j = 3 - nsp + i;
    pl.in[j] = x.sizes[2 + i];
    pl.out[j] = o.sizes[2 + i];
    pl.k[j] = w.sizes[2 + i];
    pl.s[j] = p.stride[i];
    pl.pad[j] = p.pad_begin[i];
    pl.dil[j] = p.dilation[i];
  }
  pl.groups = p.groups;
  pl.cig = x.sizes[1] / p.groups;
  pl.cog = w.sizes[1];
  pl.taps = pl.k[0] * pl.k[1] * pl.k[2];
  pl.in_size = pl.in[0] * pl.in[1] * pl.in[2];
  pl.out_size = pl.out[0] * pl.out[1] * pl.out[2];
  pl.depthwise = pl.cig == 1 && pl.cog == 1 && pl.groups > 1;
  if (pl.depthwise) return pl;
  const int64_t m = pl.cog * pl.taps;
  pl.col_bytes = aligned(static_cast<size_t>(m * pl.in_size) * sizeof(float));
  pl.gemm_bytes = sgemm_workspace(m, pl.in_size, pl.cig, std::max(1, threads));
  return pl;
}

size_t workspace_of(const Plan& p) { return kAlign + p.col_bytes + aligned(p.gemm_bytes); }

bool usable(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& o,
            const ConvTransposeParams& p) {
  return x.dtype == DType::Float32 && w.dtype == DType::Float32 && o.dtype == DType::Float32 &&
         (bias.data == nullptr || bias.dtype == DType::Float32) && ref::conv_transpose_shapes_ok(x, w, bias, o, p) &&
         flat_past_channels(x) && flat_past_channels(o) && w.is_contiguous();
}

// dst[2i] += fa * a[i], dst[2i + 1] += fb * b[i]: two taps of a stride-2 row
// whose outputs interleave (GCC vectorizes it; a stride-2 add alone it does not).
RT_SIMD_CLONES void add_pair(float* __restrict dst, const float* __restrict a, const float* __restrict b, float fa,
                             float fb, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[2 * i] += fa * a[i];
    dst[2 * i + 1] += fb * b[i];
  }
}

// Adds the column rows of one output channel (taps x input positions; tap t's
// row at col + t * tap_stride, times scale[t] when scale is not null) into
// its output plane, tap after tap in order (a stride-2 pair of taps at once:
// they write different outputs, so every output sums in the same order).
void col2im_channel(const float* col, int64_t tap_stride, const float* scale, float* plane, const Plan& p) {
  const int64_t s2 = p.s[2];
  // Tap k2's valid input columns [lo, hi) (0 <= i2 * s2 - pad + k2 * dil < out) and its output offset.
  struct Cols {
    int64_t lo, hi, off;
  };
  auto cols = [&](int64_t k2) {
    const int64_t off = k2 * p.dil[2] - p.pad[2];
    int64_t lo = off >= 0 ? 0 : (-off + s2 - 1) / s2;
    int64_t hi = p.out[2] - off <= 0 ? 0 : (p.out[2] - off + s2 - 1) / s2;
    lo = std::min(lo, p.in[2]);
    return Cols{lo, std::max(lo, std::min(hi, p.in[2])), off};
  };
  auto add = [&](float* dst, const float* src, float f, int64_t lo, int64_t hi) {
    for (int64_t i2 = lo; i2 < hi; ++i2) dst[i2 * s2] += f * src[i2];
  };
  for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
    for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
      for (int64_t k2 = 0; k2 < p.k[2];) {
        const int64_t tap = (k0 * p.k[1] + k1) * p.k[2] + k2;
        const bool pair = s2 == 2 && p.dil[2] == 1 && k2 + 1 < p.k[2];
        // b's offset is a's + 1: its valid columns start and end no later than a's.
        const Cols a = cols(k2), b = pair ? cols(k2 + 1) : a;
        const int64_t hi = std::max(a.lo, b.hi);  // both valid in [a.lo, hi)
        const float fa = scale != nullptr ? scale[tap] : 1.0f;  // x 1 changes no bit
        const float fb = scale != nullptr && pair ? scale[tap + 1] : 1.0f;
        for (int64_t i0 = 0; i0 < p.in[0]; ++i0) {
          const int64_t o0 = i0 * p.s[0] - p.pad[0] + k0 * p.dil[0];
          if (o0 < 0 || o0 >= p.out[0]) continue;
          for (int64_t i1 = 0; i1 < p.in[1]; ++i1) {
            const int64_t o1 = i1 * p.s[1] - p.pad[1] + k1 * p.dil[1];
            if (o1 < 0 || o1 >= p.out[1]) continue;
            const int64_t pos = (i0 * p.in[1] + i1) * p.in[2];
            const float* src = col + tap * tap_stride + pos;
            float* dst = plane + (o0 * p.out[1] + o1) * p.out[2] + a.off;
            if (!pair) {
              if (s2 == 1) {
                for (int64_t i2 = a.lo; i2 < a.hi; ++i2) dst[i2] += fa * src[i2];
              } else {
                add(dst, src, fa, a.lo, a.hi);
              }
              continue;
            }
            const float* src_b = col + (tap + 1) * tap_stride + pos;  // its outputs: dst + 1 + 2 i2
            add(dst + 1, src_b, fb, b.lo, std::min(b.hi, a.lo));
            add_pair(dst + 2 * a.lo, src + a.lo, src_b + a.lo, fa, fb, hi - a.lo);
            add(dst, src, fa, hi, a.hi);
          }
        }
        k2 += pair ? 2 : 1;
      }
    }
  }
}

}  // namespace

size_t conv_transpose_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ConvTransposeParams>(&params);
  if (p == nullptr || in.size() != 3 || out.size() != 1 || !usable(in[0], in[1], in[2], out[0], *p)) return 0;
  return workspace_of(plan_for(in[0], in[1], out[0], *p, get_num_threads()));
}

Status conv_transpose_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                          const OpParams& params) {
  const auto* p = std::get_if<ConvTransposeParams>(&params);
  EMBER_CHECK(p != nullptr && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
  const TensorView &x = in[0], &w = in[1], &bias = in[2], &o = out[0];
  if (!usable(x, w, bias, o, *p)) return ref::conv_transpose(ctx, in, out, params);
  const Plan pl = plan_for(x, w, o, *p, ctx.num_threads);
  if (ctx.scratch_bytes < workspace_of(pl)) return ref::conv_transpose(ctx, in, out, params);
  if (o.numel() == 0) return Status::Ok;
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign);
  float* col = reinterpret_cast<float*>(base);
  char* gemm_ws = base + pl.col_bytes;
  const float* px = x.ptr<const float>();
  const float* pw = w.ptr<const float>();
  const float* pb = bias.ptr<const float>();
  float* po = o.ptr<float>();
  const int64_t m = pl.cog * pl.taps;
  const int64_t x_cs = pl.in_size > 1 ? 1 : 0;
  auto plane_of = [&](int64_t n, int64_t c) {
    float* plane = po + n * o.strides[0] + c * o.strides[1];
    std::fill(plane, plane + pl.out_size, pb != nullptr ? pb[c * bias.strides[0]] : 0.0f);
    return plane;
  };
  if (pl.depthwise) {  // tap t's column row is x's plane times w[g, t]
    parallel_for(0, x.sizes[0] * pl.groups, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t n = i / pl.groups, g = i % pl.groups;
        col2im_channel(px + n * x.strides[0] + g * x.strides[1], 0, pw + g * w.strides[0], plane_of(n, g), pl);
      }
    });
    return Status::Ok;
  }
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    for (int64_t g = 0; g < pl.groups; ++g) {
      const float* xg = px + n * x.strides[0] + g * pl.cig * x.strides[1];
      const float* wg = pw + g * pl.cig * w.strides[0];
      // A = W_g^T: element (row r = co*taps + tap, col ci) at wg[ci * m + r].
      if (!sgemm(m, pl.in_size, pl.cig, MatrixRef<const float>{wg, 1, m},
                 MatrixRef<const float>{xg, x.strides[1], x_cs}, MatrixRef<float>{col, pl.in_size, 1},
                 /*accumulate=*/false, gemm_ws, pl.gemm_bytes, ctx.num_threads)) {
        return Status::OutOfMemory;
      }
      parallel_for(0, pl.cog, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t co = c0; co < c1; ++co) {
          col2im_channel(col + co * pl.taps * pl.in_size, pl.in_size, nullptr, plane_of(n, g * pl.cog + co), pl);
        }
      });
    }
  }
  return Status::Ok;
}

}  // namespace ember::cpu
