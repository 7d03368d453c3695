// float32 ConvTranspose (1-D to 3-D) as the blocked GEMM (gemm.h) plus col2im,
// per image and group, the spatial dims padded in front to three:
//   col (Cout/g*K x In) = weight[g]^T (Cout/g*K x Cin/g) @ x[n, g] (Cin/g x In)
// (K the kernel's taps, In the input's positions), then every column entry is
// added to the output position its tap lands on (threads over the output
// channels: each writes its own planes). The GEMM threads inside. Inputs
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

// Adds the column rows of output channel `co` (taps x input positions) into its output plane.
void col2im_channel(const float* col, float* plane, const Plan& p) {
  for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
    for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
      for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
        const float* row = col + ((k0 * p.k[1] + k1) * p.k[2] + k2) * p.in_size;
        // i2 is valid when 0 <= i2*s - pad + k2*dil < out.
        const int64_t off2 = k2 * p.dil[2] - p.pad[2], s2 = p.s[2];
        int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
        int64_t hi = p.out[2] - off2 <= 0 ? 0 : (p.out[2] - off2 + s2 - 1) / s2;
        lo = std::min(lo, p.in[2]);
        hi = std::max(lo, std::min(hi, p.in[2]));
        for (int64_t i0 = 0; i0 < p.in[0]; ++i0) {
          const int64_t o0 = i0 * p.s[0] - p.pad[0] + k0 * p.dil[0];
          if (o0 < 0 || o0 >= p.out[0]) continue;
          for (int64_t i1 = 0; i1 < p.in[1]; ++i1) {
            const int64_t o1 = i1 * p.s[1] - p.pad[1] + k1 * p.dil[1];
            if (o1 < 0 || o1 >= p.out[1]) continue;
            const float* src = row + (i0 * p.in[1] + i1) * p.in[2];
            float* dst = plane + (o0 * p.out[1] + o1) * p.out[2] + off2;
            if (s2 == 1) {
              for (int64_t i2 = lo; i2 < hi; ++i2) dst[i2] += src[i2];
            } else {
              for (int64_t i2 = lo; i2 < hi; ++i2) dst[i2 * s2] += src[i2];
            }
          }
        }
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
  RT_CHECK_OR_RETURN(p != nullptr && in.size() == 3 && out.size() == 1, Status::InvalidArgument);
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
          const int64_t c = g * pl.cog + co;
          float* plane = po + n * o.strides[0] + c * o.strides[1];
          std::fill(plane, plane + pl.out_size, pb != nullptr ? pb[c * bias.strides[0]] : 0.0f);
          col2im_channel(col + co * pl.taps * pl.in_size, plane, pl);
        }
      });
    }
  }
  return Status::Ok;
}

}  // namespace ember::cpu
