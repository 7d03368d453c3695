// float32 Conv2d as im2col + the blocked GEMM (gemm.h), per image and group:
//   out[n, g] (Cout/g x OH*OW) = weight[g] (Cout/g x Cg*KH*KW) @ col (Cg*KH*KW x OH*OW)
// The output may be NCHW or channels_last: the GEMM writes through its strides
// (rows step by the channel stride, columns by the W stride). 1x1 convolutions
// with stride 1 and no padding read the input directly (no im2col). A batch
// of images with few output positions each (groups 1: a 1-D convolution over
// many short frames) is one GEMM over several images' columns at a time
// (their im2col side by side, the product scattered back to NCHW), not a
// GEMM of a few columns per image. Many small (image, group) products
// (small batches of small images) run one single-threaded GEMM per thread;
// large ones thread inside the GEMM. Depthwise
// convolutions (one input and one output channel per group) skip both im2col
// and the GEMM (depthwise.h: vectorized over output rows), and so do
// convolutions of few input channels (image stems: depthwise.h's
// stem_conv2d, which reads the input rows directly). The bias and the
// fused activation of Conv2dParams are the GEMM's epilogue (applied as the
// micro-kernel stores C; by the depthwise kernel before its store). A
// residual (in[3], ember convert's fused Add) is added before the
// activation: by Winograd as it stores its tiles, by one pass (the residual
// and the activation) after the other paths. A weight
// packed once (Conv2dParams::weight: CpuPackedWeight, groups 1; at its first use) is read
// as the GEMM's pre-packed A operand. 3x3 stride-1 convolutions large enough
// (winograd_profitable) take Winograd F(4x4, 3x3) (winograd.h), with the
// weight transformed once where CpuPackedWeight holds it (then the bar is
// lower: no transform per call). Layouts
// that do not flatten (a non-contiguous weight, an output whose spatial dims
// do not merge) use the reference kernel.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/winograd.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;
// Images with fewer output positions than this (groups 1) share GEMMs of
// about kBatchedColumns columns.
constexpr int64_t kBatchedBelow = 64;
constexpr int64_t kBatchedColumns = 512;
// An image's im2col buffer above this many bytes is built and multiplied in
// blocks of output rows, so that the GEMM reads it from L2 (ResNet-18's 7x7
// stem wrote and read back 7.4 MB).
constexpr size_t kColumnBytes = 1 << 20;
// An im2col product of at least this many output positions per thread splits
// its rows across the threads (ConvPlan::over_rows).
constexpr int64_t kRowSplitColumns = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// (outer, inner) dims merge into one dim of stride inner_stride.
bool merges(int64_t outer_size, int64_t outer_stride, int64_t inner_size, int64_t inner_stride) {
  return outer_size == 1 || inner_size == 1 ? true : outer_stride == inner_size * inner_stride;
}

struct ConvPlan {
  int64_t batch, c, h, w, cout, oh, ow, kh, kw, cg, cout_g, groups;
  int64_t kdim, p;          // GEMM depth (Cg*KH*KW) and columns (OH*OW)
  bool direct;              // 1x1, stride 1, no padding, input H and W merge: no im2col
  bool over_units;          // one single-threaded GEMM per thread over (image, group)
  bool over_rows;           // each thread its share of the output rows: its own im2col, its own GEMMs
  int64_t images;           // > 1: images whose columns one GEMM takes together (groups 1)
  int64_t rows;             // output rows per GEMM of one image (their im2col columns stay in L2)
  int threads;
  size_t bias_bytes, col_bytes, out_bytes, gemm_bytes, slot_bytes;
  int64_t slots;
};

ConvPlan plan_for(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm,
                  int threads) {
  ConvPlan p;
  p.batch = x.sizes[0];
  p.c = x.sizes[1];
  p.h = x.sizes[2];
  p.w = x.sizes[3];
  p.cout = o.sizes[1];
  p.oh = o.sizes[2];
  p.ow = o.sizes[3];
  p.kh = wt.sizes[2];
  p.kw = wt.sizes[3];
  p.cg = wt.sizes[1];
  p.groups = prm.groups;
  p.cout_g = p.cout / p.groups;
  p.kdim = p.cg * p.kh * p.kw;
  p.p = p.oh * p.ow;
  p.threads = std::max(1, threads);
  p.direct = p.kh == 1 && p.kw == 1 && prm.stride[0] == 1 && prm.stride[1] == 1 && prm.padding[0] == 0 &&
             prm.padding[1] == 0 && merges(p.h, x.strides[2], p.w, x.strides[3]);
  const int64_t units = p.batch * p.groups;
  const double work = static_cast<double>(p.cout_g) * static_cast<double>(p.kdim) * static_cast<double>(p.p);
  p.images = p.groups == 1 && p.batch > 1 && p.p > 0 && p.p < kBatchedBelow
                 ? std::min(p.batch, std::max<int64_t>(2, kBatchedColumns / p.p))
                 : 1;
  p.over_units = p.images == 1 && units > 1 && p.threads > 1 && work < 128.0 * 128.0 * 128.0;
  // One large im2col product (a stem, a stride-2 convolution): the threads
  // split its output rows, each building and multiplying its own columns.
  // Threads inside the GEMM read columns the other thread wrote, and its
  // next im2col block then wrote over lines both held (a write to a line the
  // other core holds costs 3-5x one to a line it does not, on this Xeon):
  // ResNet-18's 7x7 stem, 2 threads: 1.43-1.57 -> 1.18-1.26 ms (1.9 on one).
  p.over_rows = !p.direct && p.images == 1 && !p.over_units && p.threads > 1 &&
                p.p >= kRowSplitColumns * p.threads && p.oh >= 2 * p.threads;
  // One image's im2col columns over kColumnBytes take several GEMMs, of p.rows output rows each.
  p.rows = p.oh;
  if (!p.direct && p.images == 1 && p.ow > 0 && p.kdim * p.p * sizeof(float) > kColumnBytes) {
    p.rows = std::max<int64_t>(1, static_cast<int64_t>(kColumnBytes / (p.kdim * p.ow * sizeof(float))));
  }
  if (p.over_rows) p.rows = std::min(p.rows, (p.oh + p.threads - 1) / p.threads);  // a thread's share at most
  const int64_t cols = p.images > 1 ? p.images * p.p : p.rows * p.ow;  // the GEMM's columns
  p.col_bytes = p.direct && p.images == 1 ? 0 : aligned(static_cast<size_t>(p.kdim * cols) * sizeof(float));
  p.out_bytes = p.images > 1 ? aligned(static_cast<size_t>(p.cout * cols) * sizeof(float)) : 0;
  const bool one_thread_gemms = p.over_units || p.over_rows;
  p.gemm_bytes = sgemm_workspace(p.cout_g, cols, p.kdim, one_thread_gemms ? 1 : p.threads);
  p.slot_bytes = p.col_bytes + p.out_bytes + aligned(p.gemm_bytes);
  p.slots = p.over_units ? std::min<int64_t>(p.threads, units) : (p.over_rows ? p.threads : 1);
  p.bias_bytes = aligned(static_cast<size_t>(p.cout) * sizeof(float));  // a strided bias, made contiguous
  return p;
}

size_t workspace_of(const ConvPlan& p) {
  return kAlign + p.bias_bytes + p.slot_bytes * static_cast<size_t>(p.slots);
}

// The packed Winograd-transformed weight the kernel may read (of this weight,
// for the GEMM kernel in use), or nullptr.
const PackedOperand* winograd_weight(const Conv2dParams& prm, const TensorView& wt) {
  const auto* w = dynamic_cast<const CpuPackedWeight*>(prm.weight);
  if (w == nullptr || w->source != wt.data) return nullptr;
  const PackedOperand* u = w->winograd();
  return u != nullptr && sgemm_packed_current(u[0]) ? u : nullptr;
}

// The Winograd kernel runs this convolution (F(4x4, 3x3) where it beats
// im2col, winograd.h); `u`: its pre-transformed weight or nullptr.
bool use_winograd(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm,
                  const PackedOperand* u) {
  return winograd_applies(x, wt, o, prm) && winograd_profitable(x, wt, o, u != nullptr);
}

// dst[i] = src[2 * i] for i < n: a stride-2 convolution's im2col row, 8
// outputs from two vectors' even lanes (GCC vector extensions, built per ISA;
// the scalar loop cost 20% of ResNet-18's 7x7 stride-2 stem). Not 16: GCC 12
// builds that shuffle for AVX2 value by value through the stack (13 % of a
// 3x3 stride-2 convolution, 56 -> 28, Zen 3); 8 take two vpermd and a blend.
// Reads nothing past src[2 * (n - 1)].
RT_SIMD_CLONES void copy_even(float* __restrict dst, const float* __restrict src, int64_t n) {
  typedef float v8f __attribute__((vector_size(32)));
#if !defined(__clang__)
  typedef int32_t v8i __attribute__((vector_size(32)));
  const v8i even = {0, 2, 4, 6, 8, 10, 12, 14};
#endif
  int64_t i = 0;
  for (; i + 8 < n; i += 8) {  // reads src[2i .. 2i + 15], 2i + 15 < 2 (n - 1)
    v8f a, b;
    std::memcpy(&a, src + 2 * i, sizeof(a));
    std::memcpy(&b, src + 2 * i + 8, sizeof(b));
#if defined(__clang__)
    const v8f v = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
    const v8f v = __builtin_shuffle(a, b, even);
#endif
    std::memcpy(dst + i, &v, sizeof(v));
  }
  for (; i < n; ++i) dst[i] = src[2 * i];
}

// dst[0, n) = src[0, n): short rows four floats a move, not a call (memcpy
// per 7-float row of a 7x7 plane's im2col took 10 % of ResNet-18's layer4 convolutions).
inline void copy_short(float* dst, const float* src, int64_t n) {
  if (n > 64) {
    std::memcpy(dst, src, sizeof(float) * n);
    return;
  }
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) std::memcpy(dst + k, src + k, 4 * sizeof(float));
  for (; k < n; ++k) dst[k] = src[k];
}

// col[(ci*KH + i)*KW + j, (oh - oh0)*OW + ow] = x[ci, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 outside)
// for the output rows oh in [oh0, oh1); col's rows `ld` apart. The row's (ci, i, j) advance with it and
// each j's valid columns are computed once per call: with few output positions (a 1-D
// convolution over short frames) the divisions per row cost more than the copy.
void im2col_rows(const float* x, const TensorView& xv, const ConvPlan& p, const Conv2dParams& prm, float* col,
                 int64_t ld, int64_t r0, int64_t r1, int64_t oh0, int64_t oh1) {
  const int64_t sc = xv.strides[1], sh = xv.strides[2], sw = xv.strides[3];
  const int64_t st = prm.stride[1];
  // Kernel column j reads inside the row for ow in [lo, hi): 0 <= ow*stride + off_w < W.
  auto range_of = [&](int64_t j, int64_t* lo, int64_t* hi) {
    const int64_t off_w = j * prm.dilation[1] - prm.padding[1];
    *lo = std::min(off_w >= 0 ? 0 : (-off_w + st - 1) / st, p.ow);
    *hi = std::max(*lo, std::min(p.w - off_w <= 0 ? 0 : (p.w - off_w + st - 1) / st, p.ow));
  };
  // Computed once per call for kernels up to kCachedKw columns wide (on the stack), per row beyond.
  constexpr int64_t kCachedKw = 512;
  int64_t bounds[2 * kCachedKw];
  const bool cached = p.kw <= kCachedKw;
  for (int64_t j = 0; cached && j < p.kw; ++j) range_of(j, &bounds[2 * j], &bounds[2 * j + 1]);
  int64_t ci = r0 / (p.kh * p.kw), i = (r0 / p.kw) % p.kh, j = r0 % p.kw;
  for (int64_t r = r0; r < r1; ++r) {
    float* dst = col + r * ld;
    const float* src = x + ci * sc;
    const int64_t off_w = j * prm.dilation[1] - prm.padding[1];
    int64_t lo = 0, hi = 0;
    if (cached) {
      lo = bounds[2 * j], hi = bounds[2 * j + 1];
    } else {
      range_of(j, &lo, &hi);
    }
    for (int64_t oh = oh0; oh < oh1; ++oh, dst += p.ow) {
      const int64_t ih = oh * prm.stride[0] - prm.padding[0] + i * prm.dilation[0];
      if (ih < 0 || ih >= p.h) {
        std::memset(dst, 0, sizeof(float) * p.ow);
        continue;
      }
      const float* row = src + ih * sh + off_w * sw;
      for (int64_t ow = 0; ow < lo; ++ow) dst[ow] = 0.0f;
      if (st == 1 && sw == 1) {
        copy_short(dst + lo, row + lo, hi - lo);
      } else if (st * sw == 2) {
        copy_even(dst + lo, row + 2 * lo, hi - lo);
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = row[ow * st * sw];
      }
      for (int64_t ow = hi; ow < p.ow; ++ow) dst[ow] = 0.0f;
    }
    if (++j == p.kw) {
      j = 0;
      if (++i == p.kh) {
        i = 0;
        ++ci;
      }
    }
  }
}

bool is_depthwise(const ConvPlan& p) { return p.cg == 1 && p.cout_g == 1; }

// y = act(y) over rows x cols of a strided matrix (Conv2dParams::activation).
RT_SIMD_CLONES void activate_row(float* __restrict y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = y[i] < lo ? lo : y[i];
    y[i] = v > hi ? hi : v;
  }
}

RT_SIMD_CLONES void hardswish_row(float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = hardswish_value(y[i]);
}

void activate_rows(float* y, int64_t rows, int64_t rs, int64_t cols, int64_t cs, const Activation& a) {
  if (a.kind == ActivationKind::None) return;
  const GemmEpilogue e = activation_epilogue(a);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * rs;
    if (cs == 1 && e.hardswish) {
      hardswish_row(row, cols);
    } else if (cs == 1) {
      activate_row(row, cols, e.lo, e.hi);
    } else {
      for (int64_t c = 0; c < cols; ++c) row[c * cs] = activate(row[c * cs], a);
    }
  }
}

RT_SIMD_CLONES void add_row(float* __restrict y, const float* __restrict r, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += r[i];
}

// o = act(o + r): the residual of a path that does not add it as it stores
// (o and r of one shape, any strides), in the order a separate Add and
// activation would take, threads over the (image, channel) planes. (Added in
// the GEMM's epilogue it made the micro-tile stores slower for every
// product: MobileNetV2 in bf16 4.3 -> 4.7 ms.)
void add_residual(const TensorView& o, const TensorView& r, const Activation& a, int threads) {
  float* po = o.ptr<float>();
  const float* pr = r.ptr<const float>();
  const int64_t channels = o.sizes[1], plane = o.sizes[2] * o.sizes[3];
  auto planes = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / channels, c = u % channels;
      for (int64_t h = 0; h < o.sizes[2]; ++h) {
        float* y = po + n * o.strides[0] + c * o.strides[1] + h * o.strides[2];
        const float* s = pr + n * r.strides[0] + c * r.strides[1] + h * r.strides[2];
        if (o.strides[3] == 1 && r.strides[3] == 1) {
          add_row(y, s, o.sizes[3]);
        } else {
          for (int64_t w = 0; w < o.sizes[3]; ++w) y[w * o.strides[3]] += s[w * r.strides[3]];
        }
        activate_rows(y, 1, 0, o.sizes[3], o.strides[3], a);
      }
    }
  };
  if (dense_channels_last(o) && std::equal(o.strides, o.strides + 4, r.strides)) {
    // One flat pass (channels_last: a plane's values lie C apart).
    const int64_t n = o.numel();
    auto flat = [&](int64_t i0, int64_t i1) {
      add_row(po + i0, pr + i0, i1 - i0);
      activate_rows(po + i0, 1, 0, i1 - i0, 1, a);
    };
    if (threads > 1 && n >= 32768) {
      parallel_for(0, n, 16384, flat);
    } else {
      flat(0, n);
    }
    return;
  }
  const int64_t units = o.sizes[0] * channels;
  if (threads > 1 && units * plane >= 32768) {
    parallel_for(0, units, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)), planes);
  } else {
    planes(0, units);
  }
}

// The reference kernel, then the activation (the reference kernel ignores it).
Status conv2d_fallback(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                       const OpParams& params, const Conv2dParams& prm) {
  EMBER_TRY(ref::conv2d(ctx, in, out, params));
  const TensorView& o = out[0];
  if (prm.activation.kind == ActivationKind::None || o.numel() == 0) return Status::Ok;
  for (int64_t n = 0; n < o.sizes[0]; ++n) {
    for (int64_t c = 0; c < o.sizes[1]; ++c) {
      activate_rows(o.ptr<float>() + n * o.strides[0] + c * o.strides[1], o.sizes[2], o.strides[2], o.sizes[3],
                    o.strides[3], prm.activation);
    }
  }
  return Status::Ok;
}

// The GEMM paths of conv2d_f32 (plan p; `gemv`: one output position).
Status conv2d_gemm(const KernelContext& ctx, const TensorView& x, const TensorView& wt, const TensorView& bias,
                   const TensorView& o, const Conv2dParams& prm, const ConvPlan& p, bool gemv) {
  const float* px = x.ptr<const float>();
  const float* pw = wt.ptr<const float>();
  const float* pb = bias.ptr<const float>();
  float* po = o.ptr<float>();
  const int64_t o_cs = p.ow > 1 ? o.strides[3] : o.strides[2];
  const int64_t x_cs = p.w > 1 ? x.strides[3] : x.strides[2];
  const uintptr_t aligned_scratch = (reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign;
  const uintptr_t base = aligned_scratch + p.bias_bytes;
  if (pb != nullptr && bias.strides[0] != 1) {
    float* contiguous = reinterpret_cast<float*>(aligned_scratch);
    for (int64_t co = 0; co < p.cout; ++co) contiguous[co] = pb[co * bias.strides[0]];
    pb = contiguous;
  }
  const PackedOperand* packed = gemv ? nullptr : packed_weight(prm, wt);
  const GemmEpilogue epilogue = activation_epilogue(prm.activation);  // bias: set per product

  // One (image, group) product, its output rows [row0, row1) (im2col only);
  // `threads` > 1 only when units run one at a time.
  auto unit = [&](int64_t u, char* slot, int threads, int64_t row0, int64_t row1) {
    const int64_t n = u / p.groups, g = u % p.groups;
    const float* xg = px + n * x.strides[0] + g * p.cg * x.strides[1];
    float* og = po + n * o.strides[0] + g * p.cout_g * o.strides[1];
    GemmEpilogue e = epilogue;
    e.row_bias = pb != nullptr ? pb + g * p.cout_g : nullptr;
    const GemmOperand a{{pw + g * p.cout_g * p.kdim, p.kdim, 1}, packed};
    if (gemv) {
      GemmEpilogue ev = epilogue;
      ev.col_bias = e.row_bias;
      return sgemm_linear(1, p.cout_g, p.kdim, GemmOperand{{xg, p.kdim, 1}, nullptr},
                          GemmOperand{{pw + g * p.cout_g * p.kdim, 1, p.kdim}, nullptr},
                          MatrixRef<float>{og, o.strides[1], o.strides[1]}, ev, slot + p.col_bytes, p.gemm_bytes,
                          threads);
    }
    if (p.direct) {
      return sgemm_fused(p.cout_g, p.p, p.kdim, a, GemmOperand{{xg, x.strides[1], x_cs}, nullptr},
                         MatrixRef<float>{og, o.strides[1], o_cs}, e, slot + p.col_bytes, p.gemm_bytes, threads);
    }
    float* col = reinterpret_cast<float*>(slot);
    for (int64_t oh0 = row0; oh0 < row1; oh0 += p.rows) {
      const int64_t oh1 = std::min(row1, oh0 + p.rows), cols = (oh1 - oh0) * p.ow;
      if (threads > 1 && p.kdim > 1) {
        parallel_for(0, p.kdim, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)),
                     [&](int64_t r0, int64_t r1) { im2col_rows(xg, x, p, prm, col, cols, r0, r1, oh0, oh1); });
      } else {
        im2col_rows(xg, x, p, prm, col, cols, 0, p.kdim, oh0, oh1);
      }
      if (!sgemm_fused(p.cout_g, cols, p.kdim, a, GemmOperand{{col, cols, 1}, nullptr},
                       MatrixRef<float>{og + oh0 * p.ow * o_cs, o.strides[1], o_cs}, e, slot + p.col_bytes,
                       p.gemm_bytes, threads)) {
        return false;
      }
    }
    return true;
  };

  if (p.images > 1) {
    // Images [n0, n0 + nb): their columns side by side, one GEMM into
    // out (Cout x nb*OH*OW, the epilogue applied), scattered to NCHW.
    char* slot = reinterpret_cast<char*>(base);
    float* col = reinterpret_cast<float*>(slot);
    float* prod = reinterpret_cast<float*>(slot + p.col_bytes);
    GemmEpilogue e = epilogue;
    e.row_bias = pb;
    for (int64_t n0 = 0; n0 < p.batch; n0 += p.images) {
      const int64_t nb = std::min(p.images, p.batch - n0), cols = nb * p.p;
      parallel_for(0, nb, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          im2col_rows(px + (n0 + i) * x.strides[0], x, p, prm, col + i * p.p, cols, 0, p.kdim, 0, p.oh);
      });
      if (!sgemm_fused(p.cout, cols, p.kdim, GemmOperand{{pw, p.kdim, 1}, packed}, GemmOperand{{col, cols, 1}, nullptr},
                       MatrixRef<float>{prod, cols, 1}, e, slot + p.col_bytes + p.out_bytes, p.gemm_bytes, p.threads))
        return Status::OutOfMemory;
      parallel_for(0, nb, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t co = 0; co < p.cout; ++co) {
            const float* src = prod + co * cols + i * p.p;
            float* dst = po + (n0 + i) * o.strides[0] + co * o.strides[1];
            for (int64_t s = 0; s < p.p; ++s) dst[s * o_cs] = src[s];
          }
        }
      });
    }
    return Status::Ok;
  }
  const int64_t units = p.batch * p.groups;
  if (!p.over_units && !p.over_rows) {
    for (int64_t u = 0; u < units; ++u) {
      if (!unit(u, reinterpret_cast<char*>(base), p.threads, 0, p.oh)) return Status::OutOfMemory;
    }
    return Status::Ok;
  }
  // Tasks of whole units, or (over_rows) bands of the output rows of every
  // unit (of at least kRowSplitColumns positions), up to kChunksPerThread a
  // thread; each thread's scratch a slot.
  const int64_t tasks =
      p.over_rows ? p.slots * std::clamp<int64_t>(p.p / (kRowSplitColumns * p.slots), 1, kChunksPerThread)
                  : std::min(units, p.slots * kChunksPerThread);
  std::atomic<bool> ok{true};
  parallel_tasks(tasks, static_cast<int>(p.slots), [&](int64_t t, int s) {
    char* slot = reinterpret_cast<char*>(base) + static_cast<size_t>(s) * p.slot_bytes;
    if (p.over_rows) {
      for (int64_t u = 0; u < units; ++u) {
        if (!unit(u, slot, 1, p.oh * t / tasks, p.oh * (t + 1) / tasks)) ok = false;
      }
      return;
    }
    for (int64_t u = units * t / tasks; u < units * (t + 1) / tasks; ++u) {
      if (!unit(u, slot, 1, 0, p.oh)) ok = false;
    }
  });
  return ok.load() ? Status::Ok : Status::OutOfMemory;
}

// Channels-last convolutions (groups 1; x and out dense channels_last: each
// position's channels contiguous) run the product in the Linear orientation,
//   out (positions x C_out) = col (positions x KH*KW*C_in) @ W',
//   W'[(i*KW + j)*C_in + ci, co] = w[co, ci, i, j] (conv_b_weight),
// the bias a column bias. A 1x1 stride-1 unpadded convolution reads x itself
// as col, every image's positions in one product; the others build col for
// blocks of an image's output positions (a window row's taps are one copy of
// KW*C_in values where they lie inside the row). Without a packed W' (ConvB)
// the weight is permuted into the scratch per call.

struct ClPlan {
  int64_t kdim, positions;  // GEMM depth (KH*KW*C_in) and output positions of one image
  bool direct;              // 1x1, stride 1, no padding: x is col
  int64_t rows;             // positions per col block
  size_t x_bytes;           // x copied channels_last (an NCHW input), or 0
  size_t weight_bytes, col_bytes, gemm_bytes;
};

// Positions per col block: a block of about kColumnBytes, at least kClRows (the GEMM's efficiency).
constexpr int64_t kClRows = 96;

ClPlan cl_plan(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm, int threads) {
  ClPlan c;
  const int64_t kh = wt.sizes[2], kw = wt.sizes[3], cout = o.sizes[1];
  c.kdim = wt.sizes[1] * kh * kw;
  c.positions = o.sizes[2] * o.sizes[3];
  c.direct = kh == 1 && kw == 1 && prm.stride[0] == 1 && prm.stride[1] == 1 && prm.padding[0] == 0 &&
             prm.padding[1] == 0;
  const int64_t m = c.direct ? o.sizes[0] * c.positions : c.positions;
  c.rows = c.direct ? m
                    : std::min(m, std::max(kClRows, static_cast<int64_t>(kColumnBytes / sizeof(float)) /
                                                        std::max<int64_t>(1, c.kdim)));
  const PackedOperand* b = packed_weight(prm, wt, CpuPackedWeight::Layout::ConvB);
  const bool packed = b != nullptr && sgemm_packed_current(*b);  // (a stale one: the weight is read)
  c.x_bytes = dense_channels_last(x) ? 0 : aligned(static_cast<size_t>(x.numel()) * sizeof(float));
  c.weight_bytes = packed || kh * kw == 1 ? 0 : aligned(static_cast<size_t>(c.kdim * cout) * sizeof(float));
  c.col_bytes = c.direct ? 0 : aligned(static_cast<size_t>(c.rows * c.kdim) * sizeof(float));
  c.gemm_bytes = aligned(sgemm_workspace(c.rows, cout, c.kdim, std::max(1, threads)));
  return c;
}

// Into a dense channels_last output from an input of any layout (one not
// channels_last is copied so first: an image of few channels, which the
// executor leaves NCHW). Not for one output position (the NCHW path's gemv
// reads the weight in place).
bool cl_applies(const TensorView& wt, const TensorView& o, const Conv2dParams& prm) {
  return prm.groups == 1 && wt.is_contiguous() && o.sizes[1] > 1 && o.sizes[2] * o.sizes[3] > 1 &&
         dense_channels_last(o);
}

// A stem (stem_applies) with a channels_last output: stem_conv2d writes it
// directly, from an NCHW or a channels_last input, ahead of the channels_last
// GEMM (im2col of 3 channels; MobileNetV2 stem, one thread: 0.59 -> 0.39-0.42 ms)
// and of Winograd.
bool stem_channels_last(const TensorView& x, const TensorView& wt, const TensorView& o, const Conv2dParams& prm) {
  return o.strides[1] == 1 && o.strides[3] >= o.sizes[1] && o.strides[3] < (int64_t{1} << 26) &&
         o.strides[2] >= o.sizes[3] * o.strides[3] && stem_applies(x, wt, o, prm);
}

// dst [(t*C_in + ci) * C_out + co] = w[(co*C_in + ci) * taps + t]: W' row-major.
void permute_conv_b(const float* w, int64_t cout, int64_t cin, int64_t taps, float* dst) {
  for (int64_t co = 0; co < cout; ++co) {
    for (int64_t ci = 0; ci < cin; ++ci) {
      for (int64_t t = 0; t < taps; ++t) dst[(t * cin + ci) * cout + co] = w[(co * cin + ci) * taps + t];
    }
  }
}

size_t cl_workspace(const ClPlan& c, int64_t cout) {
  return kAlign + aligned(static_cast<size_t>(cout) * sizeof(float)) + c.x_bytes + c.weight_bytes + c.col_bytes +
         c.gemm_bytes;
}

// col rows for output positions [p0, p1) of image x (channels_last, C_in contiguous per position).
void im2col_cl(const float* x, const TensorView& xv, const TensorView& wt, const TensorView& o,
               const Conv2dParams& prm, float* col, int64_t kdim, int64_t p0, int64_t p1) {
  const int64_t cin = xv.sizes[1], h = xv.sizes[2], w = xv.sizes[3], kh = wt.sizes[2], kw = wt.sizes[3];
  const int64_t ow_n = o.sizes[3], sh = xv.strides[2], sw = xv.strides[3];
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t oh = p / ow_n, ow = p % ow_n;
    float* dst = col + (p - p0) * kdim;
    const int64_t iw0 = ow * prm.stride[1] - prm.padding[1];
    const bool row_inside = prm.dilation[1] == 1 && iw0 >= 0 && iw0 + kw <= w;
    for (int64_t i = 0; i < kh; ++i, dst += kw * cin) {
      const int64_t ih = oh * prm.stride[0] - prm.padding[0] + i * prm.dilation[0];
      if (ih < 0 || ih >= h) {
        std::memset(dst, 0, sizeof(float) * kw * cin);
        continue;
      }
      const float* row = x + ih * sh;
      if (row_inside) {  // the window row's taps are adjacent positions: one copy
        std::memcpy(dst, row + iw0 * sw, sizeof(float) * kw * cin);
        continue;
      }
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t iw = iw0 + j * prm.dilation[1];
        if (iw < 0 || iw >= w) {
          std::memset(dst + j * cin, 0, sizeof(float) * cin);
        } else {
          std::memcpy(dst + j * cin, row + iw * sw, sizeof(float) * cin);
        }
      }
    }
  }
}

Status conv2d_cl(const KernelContext& ctx, const TensorView& input, const TensorView& wt, const TensorView& bias,
                 const TensorView& o, const Conv2dParams& prm, const ClPlan& c) {
  const int64_t cout = o.sizes[1], cin = wt.sizes[1], taps = wt.sizes[2] * wt.sizes[3];
  const float* pw = wt.ptr<const float>();
  const float* pb = bias.ptr<const float>();
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.scratch) + kAlign - 1) / kAlign * kAlign);
  if (pb != nullptr && bias.strides[0] != 1) {
    float* contiguous = reinterpret_cast<float*>(base);
    for (int64_t co = 0; co < cout; ++co) contiguous[co] = pb[co * bias.strides[0]];
    pb = contiguous;
  }
  base += aligned(static_cast<size_t>(cout) * sizeof(float));
  TensorView x = input;  // channels_last: the input, or its copy
  if (c.x_bytes > 0) {
    x.data = base;
    x.strides[1] = 1;
    x.strides[3] = x.sizes[1];
    x.strides[2] = x.sizes[3] * x.sizes[1];
    x.strides[0] = x.sizes[2] * x.strides[2];
    TensorView dst = x;
    EMBER_TRY(copy(ctx, Span<const TensorView>(&input, 1), Span<TensorView>(&dst, 1), OpParams{}));
    base += c.x_bytes;
  }
  // W' as a strided matrix: 1x1 weight^T in place, else permuted (unless packed).
  MatrixRef<const float> wb{pw, 1, c.kdim};
  if (c.weight_bytes > 0) {
    float* perm = reinterpret_cast<float*>(base);
    permute_conv_b(pw, cout, cin, taps, perm);
    wb = {perm, cout, 1};
  }
  float* col = reinterpret_cast<float*>(base + c.weight_bytes);
  char* gemm_ws = base + c.weight_bytes + c.col_bytes;
  const GemmOperand b{wb, packed_weight(prm, wt, CpuPackedWeight::Layout::ConvB)};
  GemmEpilogue e = activation_epilogue(prm.activation);
  e.col_bias = pb;
  const float* px = x.ptr<const float>();
  float* po = o.ptr<float>();
  if (c.direct) {
    const int64_t m = x.sizes[0] * c.positions;
    return sgemm_fused(m, cout, c.kdim, GemmOperand{{px, cin, 1}, nullptr}, b, MatrixRef<float>{po, cout, 1}, e,
                       gemm_ws, c.gemm_bytes, ctx.num_threads)
               ? Status::Ok
               : Status::OutOfMemory;
  }
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    const float* xn = px + n * x.strides[0];
    for (int64_t p0 = 0; p0 < c.positions; p0 += c.rows) {
      const int64_t p1 = std::min(c.positions, p0 + c.rows);
      parallel_for(p0, p1, std::max<int64_t>(16, 4096 / std::max<int64_t>(1, c.kdim)), [&](int64_t q0, int64_t q1) {
        im2col_cl(xn, x, wt, o, prm, col + (q0 - p0) * c.kdim, c.kdim, q0, q1);
      });
      if (!sgemm_fused(p1 - p0, cout, c.kdim, GemmOperand{{col, c.kdim, 1}, nullptr}, b,
                       MatrixRef<float>{po + n * o.strides[0] + p0 * cout, cout, 1}, e, gemm_ws, c.gemm_bytes,
                       ctx.num_threads)) {
        return Status::OutOfMemory;
      }
    }
  }
  return Status::Ok;
}

}  // namespace

bool dense_channels_last(const TensorView& t) {
  const int64_t c = t.sizes[1], w = t.sizes[3], h = t.sizes[2];
  return (c == 1 || t.strides[1] == 1) && (w == 1 || t.strides[3] == c) && (h == 1 || t.strides[2] == w * c) &&
         (t.sizes[0] == 1 || t.strides[0] == h * w * c);
}

const PackedOperand* packed_weight(const Conv2dParams& prm, const TensorView& wt, CpuPackedWeight::Layout layout) {
  const auto* w = dynamic_cast<const CpuPackedWeight*>(prm.weight);
  if (w == nullptr || prm.groups != 1 || w->source != wt.data || w->layout != layout) return nullptr;
  return w->gemm_operand();
}

// The channels-last product's B operand: W'[(i*KW + j)*C_in + ci, co] = w[co, ci, i, j]
// (CpuPackedWeight::Layout::ConvB packs it once).
PackedOperand conv_b_weight(const float* w, int64_t cout, int64_t cin, int64_t taps, bool bf16) {
  if (taps == 1) return sgemm_pack_b(cin, cout, MatrixRef<const float>{w, 1, cin}, bf16);
  std::vector<float> perm(static_cast<size_t>(cout * cin * taps));
  permute_conv_b(w, cout, cin, taps, perm.data());
  return sgemm_pack_b(cin * taps, cout, MatrixRef<const float>{perm.data(), cout, 1}, bf16);
}

size_t conv2d_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  const Conv2dParams* prm = std::get_if<Conv2dParams>(&params);
  if (prm == nullptr || (in.size() != 3 && in.size() != 4) || out.size() != 1 || in[0].rank != 4 || in[1].rank != 4 ||
      out[0].rank != 4 || prm->groups <= 0) {
    return 0;
  }
  if (stem_channels_last(in[0], in[1], out[0], *prm))
    return stem_workspace(in[0], in[1], out[0], *prm, plan_for(in[0], in[1], out[0], *prm, get_num_threads()).threads);
  if (cl_applies(in[1], out[0], *prm))
    return cl_workspace(cl_plan(in[0], in[1], out[0], *prm, get_num_threads()), out[0].sizes[1]);
  const PackedOperand* u = winograd_weight(*prm, in[1]);
  if (use_winograd(in[0], in[1], out[0], *prm, u))
    return winograd_workspace(in[0], out[0], /*pretransformed=*/u != nullptr, get_num_threads());
  const ConvPlan p = plan_for(in[0], in[1], out[0], *prm, get_num_threads());
  if (is_depthwise(p)) return depthwise_workspace(in[0], in[1], out[0], *prm, p.threads);
  if (stem_applies(in[0], in[1], out[0], *prm)) return stem_workspace(in[0], in[1], out[0], *prm, p.threads);
  return workspace_of(p);
}

Status conv2d_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                  const OpParams& params) {
  const Conv2dParams* prm = std::get_if<Conv2dParams>(&params);
  EMBER_CHECK(prm != nullptr && prm->groups > 0 && (in.size() == 3 || in.size() == 4) && out.size() == 1,
              Status::InvalidArgument);
  const TensorView &x = in[0], &wt = in[1], &bias = in[2], &o = out[0];
  EMBER_CHECK(x.rank == 4 && wt.rank == 4 && o.rank == 4, Status::InvalidArgument);
  EMBER_CHECK(x.dtype == DType::Float32 && wt.dtype == DType::Float32 && o.dtype == DType::Float32 &&
                         (bias.data == nullptr || bias.dtype == DType::Float32),
                     Status::DTypeMismatch);
  EMBER_CHECK(o.sizes[0] == x.sizes[0] && o.sizes[1] == wt.sizes[0] && o.sizes[1] % prm->groups == 0 &&
                         x.sizes[1] == wt.sizes[1] * prm->groups &&
                         (bias.data == nullptr || (bias.rank == 1 && bias.sizes[0] == o.sizes[1])),
                     Status::ShapeMismatch);
  // A residual (in[3]): added to the convolution and its bias, before the
  // activation; by Winograd as it stores its tiles (where the residual has
  // the output's strides), else by a pass after the convolution.
  const TensorView* res = in.size() > 3 && in[3].data != nullptr ? &in[3] : nullptr;
  if (res != nullptr) {
    EMBER_CHECK(res->dtype == DType::Float32, Status::DTypeMismatch);
    EMBER_CHECK(res->rank == 4 && std::equal(o.sizes, o.sizes + 4, res->sizes), Status::ShapeMismatch);
  }
  // Winograd F(4x4, 3x3) where it beats im2col; without enough scratch, the paths below.
  const PackedOperand* u = winograd_weight(*prm, wt);
  const bool same_strides = res != nullptr && std::equal(o.strides, o.strides + 4, res->strides);
  if (res == nullptr && stem_channels_last(x, wt, o, *prm) &&
      stem_conv2d(x, wt, bias, o, *prm, ctx.scratch, ctx.scratch_bytes,
                  plan_for(x, wt, o, *prm, ctx.num_threads).threads)) {
    return Status::Ok;
  }
  const bool cl = cl_applies(wt, o, *prm);
  if (!cl && use_winograd(x, wt, o, *prm, u) && (res == nullptr || same_strides) &&
      winograd_conv2d(x, wt, bias, o, *prm, u, ctx.scratch, ctx.scratch_bytes, ctx.num_threads,
                      res != nullptr ? res->ptr<const float>() : nullptr)) {
    return Status::Ok;
  }
  if (res != nullptr) {
    Conv2dParams plain = *prm;
    plain.activation = {};
    EMBER_TRY(conv2d_f32(ctx, Span<const TensorView>(in.data(), 3), out, plain));
    add_residual(o, *res, prm->activation, ctx.num_threads);
    return Status::Ok;
  }
  if (cl) {
    const ClPlan c = cl_plan(x, wt, o, *prm, ctx.num_threads);
    if (ctx.scratch_bytes >= cl_workspace(c, o.sizes[1])) return conv2d_cl(ctx, x, wt, bias, o, *prm, c);
  }
  const ConvPlan p = plan_for(x, wt, o, *prm, ctx.num_threads);
  if (is_depthwise(p) && wt.is_contiguous()) {
    const auto* pw = dynamic_cast<const CpuPackedWeight*>(prm->weight);
    const DepthwiseClWeight* dw = pw != nullptr && pw->source == wt.data ? pw->depthwise_cl() : nullptr;
    if (o.numel() > 0) depthwise_conv2d(x, wt, bias, o, *prm, ctx.scratch, ctx.scratch_bytes, p.threads, dw);
    return Status::Ok;
  }
  if (stem_applies(x, wt, o, *prm) && stem_conv2d(x, wt, bias, o, *prm, ctx.scratch, ctx.scratch_bytes, p.threads)) {
    return Status::Ok;
  }
  const bool flat = merges(p.oh, o.strides[2], p.ow, o.strides[3]) && wt.is_contiguous();
  if (!flat || ctx.scratch_bytes < workspace_of(p)) return conv2d_fallback(ctx, in, out, params, *prm);
  if (o.numel() == 0) return Status::Ok;
  // One output position (a squeeze-and-excitation block's FC): out^T = x^T W^T, a row times the
  // weight read in place by gemv's dot kernels (the bias a column bias there); the weight is not packed.
  const bool gemv = p.direct && p.p == 1 && p.images == 1 && x.strides[1] == 1;
  return conv2d_gemm(ctx, x, wt, bias, o, *prm, p, gemv);
}

}  // namespace ember::cpu
