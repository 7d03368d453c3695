// Float32 fast paths for row reductions: Sum, Mean, Max and Min over the
// trailing dims of a contiguous input (each output element reduces one
// contiguous row), and Softmax/LogSoftmax over the last dim of a contiguous
// input. Rows run in parallel; inner loops use several independent lanes so
// each ISA clone vectorizes them. Sums accumulate in double, as the reference
// does. Other layouts and dtypes use the reference kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr int kLanes = 16;

// rows x n: the geometry when `in` is contiguous and every reduced dim comes
// after every kept dim of size > 1 (size-1 dims do not matter).
bool row_geometry(const TensorView& in, Span<TensorView> out, uint32_t dims, int64_t& rows, int64_t& n) {
  if (!in.is_contiguous()) return false;
  for (const TensorView& o : out) {
    if (!o.is_contiguous() || o.rank != in.rank) return false;
  }
  rows = 1;
  n = 1;
  bool seen_reduced = false;
  for (int d = 0; d < in.rank; ++d) {
    const bool reduced = (dims >> d) & 1u;
    if (reduced) {
      n *= in.sizes[d];
      seen_reduced = seen_reduced || in.sizes[d] != 1;
    } else {
      if (seen_reduced && in.sizes[d] != 1) return false;
      rows *= in.sizes[d];
    }
  }
  return rows > 0 && n > 0;
}

// In double, 16 lanes in four 32-byte GCC vectors (as norm.cc's row_moments:
// a plain 16-double array was compiled to scalar adds), then whole 4-float
// groups, the lanes summed pairwise, then the last 0-3 floats.
typedef float SumF4 __attribute__((vector_size(16)));
typedef double SumD4 __attribute__((vector_size(32)));

// The bodies below are always inlined: into their own clones, and into
// softmax_row's, so a softmax row is one call per ISA (three calls a row:
// int8 BERT at batch 8, rows of 128, spent 10.7 ms in softmax, now 9.0).
__attribute__((always_inline)) inline double row_sum_body(const float* __restrict x, int64_t n) {
  SumD4 acc[4] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int v = 0; v < 4; ++v) {
      SumF4 f;
      std::memcpy(&f, x + i + 4 * v, sizeof(f));
      acc[v] += __builtin_convertvector(f, SumD4);
    }
  }
  for (; i + 4 <= n; i += 4) {
    SumF4 f;
    std::memcpy(&f, x + i, sizeof(f));
    acc[0] += __builtin_convertvector(f, SumD4);
  }
  // Pairwise: a lane-order sum (16 dependent adds) bounded the short rows of
  // squeeze-and-excitation pools (672 planes of 14x14: 0.035 ms).
  const SumD4 s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  double total = (s[0] + s[1]) + (s[2] + s[3]);
  for (; i < n; ++i) total += static_cast<double>(x[i]);
  return total;
}

RT_SIMD_CLONES double row_sum(const float* __restrict x, int64_t n) { return row_sum_body(x, n); }

// The row's maximum (minimum) ignoring NaN, and whether it holds a NaN. The 8
// running extremes are one 32-byte generic vector (GCC's vector extensions: a
// ymm register on AVX2, two xmm on SSE2; wider ones become scalars in the
// AVX2 clone): as a float array of kLanes with the lanes unrolled, GCC
// vectorized neither the loop nor the lanes and kept them on the stack.
typedef float LaneF __attribute__((vector_size(32)));
typedef int32_t LaneI __attribute__((vector_size(32)));

template <bool kMax>
__attribute__((always_inline)) inline float row_extreme_body(const float* __restrict x, int64_t n, bool* has_nan) {
  const float init = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  LaneF best = init - LaneF{};
  LaneI nan = LaneI{};
  int64_t i = 0;
  constexpr int kL = sizeof(LaneF) / sizeof(float);
  for (; i + kL <= n; i += kL) {
    LaneF v;
    std::memcpy(&v, x + i, sizeof(v));
    best = (kMax ? v > best : v < best) ? v : best;
    nan |= v != v;
  }
  float b = init;
  int any_nan = 0;
  for (int j = 0; j < kL; ++j) {
    b = (kMax ? best[j] > b : best[j] < b) ? best[j] : b;
    any_nan |= nan[j];
  }
  for (; i < n; ++i) {
    const float v = x[i];
    b = (kMax ? v > b : v < b) ? v : b;
    any_nan |= v != v;
  }
  *has_nan = any_nan != 0;
  return b;
}

template <bool kMax>
RT_SIMD_CLONES float row_extreme(const float* __restrict x, int64_t n, bool* has_nan) {
  return row_extreme_body<kMax>(x, n, has_nan);
}

// Elements per parallel chunk.
int64_t rows_per_chunk(int64_t n) { return n >= kElementwiseGrain ? 1 : kElementwiseGrain / n; }

// One long row: partial sums over fixed chunks, added in order (deterministic).
double long_row_sum(const float* x, int64_t n) {
  constexpr int64_t kMaxChunks = 64;
  const int64_t chunks = std::min<int64_t>(kMaxChunks, (n + kElementwiseGrain - 1) / kElementwiseGrain);
  if (chunks <= 1) return row_sum(x, n);
  double partial[kMaxChunks] = {};
  const int64_t step = (n + chunks - 1) / chunks;
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t lo = c * step, hi = std::min(n, lo + step);
      partial[c] = lo < hi ? row_sum(x + lo, hi - lo) : 0.0;
    }
  });
  double total = 0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  return total;
}

template <bool kMean>
Status sum_or_mean(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ReduceParams>(&params);
  int64_t rows = 0, n = 0;
  if (p == nullptr || in[0].dtype != DType::Float32 || out[0].dtype != DType::Float32 ||
      !row_geometry(in[0], out, p->dims, rows, n)) {
    return kMean ? ref::mean(ctx, in, out, params) : ref::sum(ctx, in, out, params);
  }
  const float* x = in[0].ptr<const float>();
  float* y = out[0].ptr<float>();
  const double scale = kMean ? 1.0 / static_cast<double>(n) : 1.0;
  if (rows == 1) {
    y[0] = static_cast<float>(long_row_sum(x, n) * scale);
    return Status::Ok;
  }
  parallel_for(0, rows, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) y[r] = static_cast<float>(row_sum(x + r * n, n) * scale);
  });
  return Status::Ok;
}

template <bool kMax>
Status extreme(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<ReduceParams>(&params);
  int64_t rows = 0, n = 0;
  if (p == nullptr || in[0].dtype != DType::Float32 || out.size() != 2 || out[0].dtype != DType::Float32 ||
      out[1].dtype != DType::Int64 || !row_geometry(in[0], out, p->dims, rows, n)) {
    return kMax ? ref::max_reduce(ctx, in, out, params) : ref::min_reduce(ctx, in, out, params);
  }
  const float* x = in[0].ptr<const float>();
  float* values = out[0].ptr<float>();
  int64_t* indices = out[1].ptr<int64_t>();
  parallel_for(0, rows, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x + r * n;
      bool has_nan = false;
      const float best = row_extreme<kMax>(row, n, &has_nan);
      int64_t i = 0;  // the first NaN, else the first occurrence of the extreme
      if (has_nan) {
        while (row[i] == row[i]) ++i;
      } else {
        while (row[i] != best) ++i;
      }
      values[r] = row[i];
      indices[r] = i;
    }
  });
  return Status::Ok;
}

// One row of (log_)softmax: m = the row's maximum (NaN if it holds one),
// y = exp(x - m), sum in double, then y / sum (log: x - m - log(sum)).
template <bool kLog>
__attribute__((always_inline)) inline void softmax_row_body(const float* __restrict x, float* __restrict y,
                                                            int64_t n) {
  bool has_nan = false;
  float m = row_extreme_body<true>(x, n, &has_nan);
  if (has_nan) m = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i] - m);  // log_softmax overwrites these below
  const double sum = row_sum_body(y, n);
  if (kLog) {
    const float log_sum = static_cast<float>(std::log(sum));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

template <bool kLog>
RT_SIMD_CLONES void softmax_row_clones(const float* __restrict x, float* __restrict y, int64_t n) {
  softmax_row_body<kLog>(x, y, n);
}

#if RT_X86_VARIANTS
template <bool kLog>
RT_AVX2_FMA void softmax_row_avx2_fma(const float* __restrict x, float* __restrict y, int64_t n) {
  softmax_row_body<kLog>(x, y, n);
}
#endif

// fast_exp's polynomial in multiply-adds on AVX2 (cpu_kernels.h: RT_AVX2_FMA):
// BERT's softmaxes (batch 1, Zen 3, one thread) 1.7-1.8 -> 1.4-1.5 ms.
template <bool kLog>
void softmax_row(const float* x, float* y, int64_t n) {
#if RT_X86_VARIANTS
  if (avx2_fma_variant()) return softmax_row_avx2_fma<kLog>(x, y, n);
#endif
  softmax_row_clones<kLog>(x, y, n);
}

// Up to kSoftmaxRows rows on the vector rows kernels (softmax.h) where the
// CPU has one; the mask of the rows left to softmax_row.
unsigned softmax_rows_vector(const float* x, float* y, int64_t n, int count, bool log) {
#if RT_X86_VARIANTS
  if (avx2_fma_variant()) return softmax_rows_avx2(x, y, n, count, log);
#endif
  return softmax_rows_avx512(x, y, n, count, log);
}

// `rows` contiguous rows of n > 0 values, x and y distinct.
template <bool kLog>
void softmax_block(const float* x, float* y, int64_t n, int64_t rows) {
  for (int64_t r = 0; r < rows; r += kSoftmaxRows) {
    const int count = static_cast<int>(std::min<int64_t>(kSoftmaxRows, rows - r));
    const unsigned left = softmax_rows_vector(x + r * n, y + r * n, n, count, kLog);
    for (int q = 0; q < count; ++q) {
      if ((left >> q & 1) != 0) softmax_row<kLog>(x + (r + q) * n, y + (r + q) * n, n);
    }
  }
}

template <bool kLog>
Status softmax_rows(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                    const OpParams& params) {
  const auto* p = std::get_if<SoftmaxParams>(&params);
  const TensorView& x = in[0];
  const bool fast = p != nullptr && x.dtype == DType::Float32 && out[0].dtype == DType::Float32 && x.rank > 0 &&
                    p->dim == x.rank - 1 && x.is_contiguous() && out[0].is_contiguous() && out[0].rank == x.rank;
  if (!fast) return kLog ? ref::log_softmax(ctx, in, out, params) : ref::softmax(ctx, in, out, params);
  for (int d = 0; d < x.rank; ++d) EMBER_CHECK(x.sizes[d] == out[0].sizes[d], Status::ShapeMismatch);
  const int64_t n = x.sizes[x.rank - 1];
  if (n == 0 || x.numel() == 0) return Status::Ok;
  const int64_t rows = x.numel() / n;
  const float* xp = x.ptr<const float>();
  float* yp = out[0].ptr<float>();
  parallel_for(0, rows, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    softmax_block<kLog>(xp + begin * n, yp + begin * n, n, end - begin);
  });
  return Status::Ok;
}

}  // namespace

Status sum_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return sum_or_mean<false>(ctx, in, out, params);
}

Status mean_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return sum_or_mean<true>(ctx, in, out, params);
}

Status max_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<true>(ctx, in, out, params);
}

Status min_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  return extreme<false>(ctx, in, out, params);
}

namespace {

// acc[c] += x[p * ld + c] for the n positions p in order, in double, for
// kQuads * 4 channels held in registers (kQuads 4-double accumulators).
template <int kQuads>
__attribute__((always_inline)) inline void position_sums_body(const float* __restrict x, int64_t n, int64_t ld,
                                                              double* __restrict acc) {
  SumD4 a[kQuads];
  std::memcpy(a, acc, sizeof(a));
  for (int64_t p = 0; p < n; ++p, x += ld) {
    for (int v = 0; v < kQuads; ++v) {
      SumF4 f;
      std::memcpy(&f, x + 4 * v, sizeof(f));
      a[v] += __builtin_convertvector(f, SumD4);
    }
  }
  std::memcpy(acc, a, sizeof(a));
}

template <int kQuads>
RT_SIMD_CLONES void position_sums(const float* __restrict x, int64_t n, int64_t ld, double* __restrict acc) {
  position_sums_body<kQuads>(x, n, ld, acc);
}

// The 1 x 1 pool of a channels_last input (x.strides = [any, 1, W * C, C]):
// each image's H * W position rows of C channels summed in double, position
// after position as the reference walks a plane (so bitwise the float64
// reference's mean rounded to float). A task takes up to 128 channels of one
// image and walks the positions 32 at a time (a few KB that stay in L1),
// 16 channels at a time in registers (then 8, 4, 1) with the running sums
// kept in acc between the chunks, so each position row is read from memory
// once. Threads split the (image, channel group) tasks.
void pool_channels_last(const TensorView& x, const TensorView& y) {
  constexpr int64_t kGroup = 128, kPositions = 32;
  const int64_t c = x.sizes[1], h = x.sizes[2], w = x.sizes[3], n = h * w;
  const int64_t groups = (c + kGroup - 1) / kGroup;
  const float* xp = x.ptr<const float>();
  float* yp = y.ptr<float>();
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (std::min(c, kGroup) * n));
  parallel_for(0, x.sizes[0] * groups, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t image = t / groups, g0 = t % groups * kGroup, count = std::min(kGroup, c - g0);
      const float* xi = xp + image * x.strides[0] + g0;
      double acc[kGroup] = {};
      for (int64_t p0 = 0; p0 < n; p0 += kPositions) {
        const int64_t np = std::min(kPositions, n - p0);
        const float* xr = xi + p0 * c;
        int64_t k = 0;
        for (; k + 16 <= count; k += 16) position_sums<4>(xr + k, np, c, acc + k);
        if (k + 8 <= count) position_sums<2>(xr + k, np, c, acc + k), k += 8;
        if (k + 4 <= count) position_sums<1>(xr + k, np, c, acc + k), k += 4;
        for (; k < count; ++k) {
          for (int64_t p = 0; p < np; ++p) acc[k] += static_cast<double>(xr[p * c + k]);
        }
      }
      for (int64_t k = 0; k < count; ++k) {
        yp[image * y.strides[0] + (g0 + k) * y.strides[1]] =
            static_cast<float>(acc[k] / static_cast<double>(h) / static_cast<double>(w));
      }
    }
  });
}

}  // namespace

// AdaptiveAvgPool2d to 1 x 1 (GlobalAveragePool: squeeze-excite blocks, the
// head of most CNNs) over contiguous planes: each plane summed in double
// (row_sum), divided by H then W as the reference does; channels_last inputs
// (any output strides) in pool_channels_last, also in double. Other cases: the
// reference kernel (which sums in float).
Status adaptive_avg_pool2d_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                               const OpParams& params) {
  const TensorView& x = in[0];
  const TensorView& y = out[0];
  if (x.dtype != DType::Float32 || y.dtype != DType::Float32 || x.rank != 4 || y.rank != 4 || y.sizes[2] != 1 ||
      y.sizes[3] != 1 || y.sizes[0] != x.sizes[0] || y.sizes[1] != x.sizes[1] || x.sizes[2] < 1 || x.sizes[3] < 1) {
    return ref::adaptive_avg_pool2d(ctx, in, out, params);
  }
  if (!x.is_contiguous() || !y.is_contiguous()) {
    const int64_t c = x.sizes[1];
    const bool channels_last = x.strides[1] == 1 && x.strides[3] == c && x.strides[2] == x.sizes[3] * c;
    if (!channels_last) return ref::adaptive_avg_pool2d(ctx, in, out, params);
    pool_channels_last(x, y);
    return Status::Ok;
  }
  const int64_t planes = x.sizes[0] * x.sizes[1], h = x.sizes[2], w = x.sizes[3], n = h * w;
  const float* xp = x.ptr<const float>();
  float* yp = y.ptr<float>();
  parallel_for(0, planes, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      yp[r] = static_cast<float>(row_sum(xp + r * n, n) / static_cast<double>(h) / static_cast<double>(w));
    }
  });
  return Status::Ok;
}

void softmax_rows_f32(const float* x, float* y, int64_t n, int64_t rows) { softmax_block<false>(x, y, n, rows); }

Status softmax_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                   const OpParams& params) {
  return softmax_rows<false>(ctx, in, out, params);
}

Status log_softmax_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                       const OpParams& params) {
  return softmax_rows<true>(ctx, in, out, params);
}

}  // namespace ember::cpu
