// float32 layer_norm over contiguous rows: vectorized statistics (float lanes,
// as PyTorch's) and a fused normalize-scale-shift pass, rows split across
// threads. Other layouts use the reference kernel.
#include <cmath>
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

}  // namespace

Status layer_norm_f32(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out,
                      const OpParams& params) {
  const auto* p = std::get_if<NormParams>(&params);
  const TensorView &x = in[0], &w = in[1], &b = in[2];
  bool fast = p != nullptr && x.dtype == DType::Float32 && out[0].dtype == DType::Float32 && x.is_contiguous() &&
              out[0].is_contiguous() && p->normalized_rank >= 1 && p->normalized_rank <= x.rank;
  for (const TensorView* v : {&w, &b}) {
    fast = fast && (v->data == nullptr || (v->dtype == DType::Float32 && v->is_contiguous()));
  }
  if (!fast) return ref::layer_norm(ctx, in, out, params);
  int64_t n = 1;
  for (int d = x.rank - p->normalized_rank; d < x.rank; ++d) n *= x.sizes[d];
  if (n == 0 || x.numel() == 0) return Status::Ok;
  const int64_t rows = x.numel() / n;
  const float* xp = x.ptr<const float>();
  const float* wp = w.data ? w.ptr<const float>() : nullptr;
  const float* bp = b.data ? b.ptr<const float>() : nullptr;
  float* yp = out[0].ptr<float>();
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = xp + r * n;
      const float mean = static_cast<float>(row_moment<false>(xr, n, 0.0f) / static_cast<double>(n));
      const double m2 = row_moment<true>(xr, n, mean);  // a second pass around the mean: no cancellation
      const double rstd = 1.0 / std::sqrt(m2 / static_cast<double>(n) + p->eps);
      normalize_row(xr, mean, static_cast<float>(rstd), wp, bp, yp + r * n, n);
    }
  });
  return Status::Ok;
}

}  // namespace ember::cpu
