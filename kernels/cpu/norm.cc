// float32 layer_norm over contiguous rows: vectorized statistics (float lanes,
// as PyTorch's) and a fused normalize-scale-shift pass, rows split across
// threads; AddLayerNorm the same on each row of a + b, summed into an L1
// buffer first (the values the Add op would have written). Other layouts use
// the reference kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/core/thread_pool.h"

namespace ember::cpu {
namespace {

constexpr int kLanes = 16;

typedef float Float8 __attribute__((vector_size(32)));

// The sum of a row (kM2: of its squared deviations from `mean`): 16 float
// lanes in two 32-byte GCC vectors (wider generic vectors become scalars in
// the AVX2 clone), as PyTorch's float layer_norm sums in float, the lanes
// then summed in double in lane order. One statistic a pass: computing both
// in both passes cost a third more. Sums in double (converting every value)
// were the kernel's limit: ops_bench layer_norm_256x768, one thread, Zen 4:
// 77.5 -> 46.5 us.
template <bool kM2>
RT_SIMD_CLONES double row_moment(const float* __restrict x, int64_t n, float mean) {
  Float8 s[2] = {};
  const Float8 m = Float8{} + mean;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int v = 0; v < 2; ++v) {
      Float8 f;
      std::memcpy(&f, x + i + 8 * v, sizeof(f));
      if (kM2) {
        s[v] += (f - m) * (f - m);
      } else {
        s[v] += f;
      }
    }
  }
  double t = 0;
  for (int j = 0; j < kLanes; ++j) t += static_cast<double>(s[j / 8][j % 8]);
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - (kM2 ? mean : 0.0f);
    t += kM2 ? d * d : d;
  }
  return t;
}

RT_SIMD_CLONES void normalize_row(const float* __restrict x, float mean, float rstd, const float* __restrict w,
                                  const float* __restrict b, float* __restrict y, int64_t n) {
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  } else if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i];
  } else if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  }
}

RT_SIMD_CLONES void add_rows(const float* __restrict a, const float* __restrict b, float* __restrict s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s[i] = a[i] + b[i];
}

// Contiguous float32 inputs (the optional ones absent or so too) and output:
// the rows (of n values each) of in[0]; -1 for another layout or dtype.
int64_t fast_rows(Span<const TensorView> in, const TensorView& out, const NormParams* p, int64_t* n) {
  const TensorView& x = in[0];
  bool fast = p != nullptr && x.dtype == DType::Float32 && out.dtype == DType::Float32 && x.is_contiguous() &&
              out.is_contiguous() && p->normalized_rank >= 1 && p->normalized_rank <= x.rank;
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorView& v = in[i];
    fast = fast && (v.data == nullptr || (v.dtype == DType::Float32 && v.is_contiguous()));
  }
  if (!fast) return -1;
  *n = 1;
  for (int d = x.rank - p->normalized_rank; d < x.rank; ++d) *n *= x.sizes[d];
  return *n == 0 ? 0 : x.numel() / *n;
}

// out's rows = layer_norm of x's rows (x + y's with `y`, each row's sum in
// `sums`: a row of n floats a slot, `sum_stride` apart), weight and bias (or
// null) of n values, on up to `threads` threads.
void norm_rows(const float* xp, const float* yp, const float* wp, const float* bp, float* op, int64_t rows,
               int64_t n, double eps, int threads, float* sums = nullptr, int64_t sum_stride = 0) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / n);
  const int64_t tasks = std::min(int64_t{std::max(threads, 1)} * kChunksPerThread, (rows + grain - 1) / grain);
  parallel_tasks(tasks, threads, [&](int64_t t, int slot) {
    for (int64_t r = rows * t / tasks; r < rows * (t + 1) / tasks; ++r) {
      const float* xr = xp + r * n;
      if (yp != nullptr) {  // AddLayerNorm: the row's sum, as the Add op's output would hold it, in L1
        float* sum = sums + slot * sum_stride;
        add_rows(xr, yp + r * n, sum, n);
        xr = sum;
      }
      const float mean = static_cast<float>(row_moment<false>(xr, n, 0.0f) / static_cast<double>(n));
      const double m2 = row_moment<true>(xr, n, mean);  // a second pass around the mean: no cancellation
      const double rstd = 1.0 / std::sqrt(m2 / static_cast<double>(n) + eps);
      normalize_row(xr, mean, static_cast<float>(rstd), wp, bp, op + r * n, n);
    }
  });
}

// AddLayerNorm's row-sum buffer a thread slot: n floats, 64-byte aligned.
int64_t sum_stride(int64_t n) { return (n + 15) / 16 * 16; }

const float* data_or_null(const TensorView& v) { return v.data ? v.ptr<const float>() : nullptr; }

}  // namespace

Status layer_norm_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  int64_t n = 0;
  const int64_t rows = fast_rows(in, out[0], p, &n);
  if (rows < 0) return ref::layer_norm(ctx, in, out, params);
  if (rows > 0) {
    norm_rows(in[0].ptr<const float>(), nullptr, data_or_null(in[1]), data_or_null(in[2]), out[0].ptr<float>(),
              rows, n, p->eps, ctx.num_threads);
  }
  return Status::Ok;
}

size_t add_layer_norm_f32_workspace(Span<const TensorView> in, Span<const TensorView> out, const OpParams& params) {
  int64_t n = 0;
  if (in.size() != 4 || out.size() != 1 || fast_rows(in, out[0], std::get_if<NormParams>(&params), &n) <= 0) return 0;
  return 64 + static_cast<size_t>(get_num_threads() * sum_stride(n)) * sizeof(float);
}

// AddLayerNorm: in a, b (a's shape), weight, bias; out layer_norm(a + b).
Status add_layer_norm_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                          const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  int64_t n = 0;
  const TensorView &a = in[0], &b = in[1];
  const bool same = in.size() == 4 && b.data != nullptr && a.rank == b.rank &&
                    std::equal(a.sizes, a.sizes + a.rank, b.sizes);
  const int64_t rows = same ? fast_rows(in, out[0], p, &n) : -1;
  if (rows < 0) return ref::add_layer_norm(ctx, in, out, params);
  if (rows == 0) return Status::Ok;
  // A row buffer a thread from the workspace (planned for fewer threads: fewer of them).
  const int64_t stride = sum_stride(n);
  const int64_t slots = ctx.scratch_bytes > 64 ? static_cast<int64_t>((ctx.scratch_bytes - 64) / sizeof(float)) / stride : 0;
  if (slots < 1) return ref::add_layer_norm(ctx, in, out, params);
  float* sums = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(ctx.scratch) + 63) / 64 * 64);
  norm_rows(a.ptr<const float>(), b.ptr<const float>(), data_or_null(in[2]), data_or_null(in[3]), out[0].ptr<float>(),
            rows, n, p->eps, static_cast<int>(std::min<int64_t>(ctx.num_threads, slots)), sums, stride);
  return Status::Ok;
}

}  // namespace ember::cpu
