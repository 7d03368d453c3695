#include "quant/qscheme.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/core/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

// The activation scans below run on every dynamic int8 product (36 per BERT
// run): built for AVX-512, AVX2 and the baseline, picked at load by CPU
// features, as kernels/cpu's RT_SIMD_CLONES (this library sits below kernels/cpu).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define RT_QSCHEME_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RT_QSCHEME_CLONES
#endif

namespace ember::quant {
namespace {

// min and max of n floats: 16 lanes in two 32-byte GCC vectors (a plain
// 16-float array was compiled to scalar vmaxss; wider generic vectors become
// scalars in the AVX2 clone).
typedef float Lanes8 __attribute__((vector_size(32)));

RT_QSCHEME_CLONES void min_max(const float* x, int64_t n, float* mn, float* mx) {
  constexpr int kL = 16;
  Lanes8 lo[2], hi[2];
  for (int h = 0; h < 2; ++h) {
    lo[h] = std::numeric_limits<float>::infinity() - Lanes8{};
    hi[h] = -std::numeric_limits<float>::infinity() - Lanes8{};
  }
  int64_t i = 0;
  for (; i + kL <= n; i += kL) {
    for (int h = 0; h < 2; ++h) {
      Lanes8 v;
      std::memcpy(&v, x + i + 8 * h, sizeof(v));
      lo[h] = v < lo[h] ? v : lo[h];
      hi[h] = v > hi[h] ? v : hi[h];
    }
  }
  float a = lo[0][0], b = hi[0][0];
  for (; i < n; ++i) {
    a = x[i] < a ? x[i] : a;
    b = x[i] > b ? x[i] : b;
  }
  for (int j = 1; j < kL; ++j) {
    a = lo[j / 8][j % 8] < a ? lo[j / 8][j % 8] : a;
    b = hi[j / 8][j % 8] > b ? hi[j / 8][j % 8] : b;
  }
  *mn = a;
  *mx = b;
}

// Quantizes n floats to uint8 with (scale, zp) over [0, 255] (or the reduced
// range). Clamping before rounding equals rounding before clamping (the bounds
// are integers); the magic-number round is exact half-to-even for |t| < 2^22.
RT_QSCHEME_CLONES void quantize_row_u8(const float* x, int64_t n, QParams p, int32_t qmin, int32_t qmax, uint8_t* q) {
  const float inv = 1.0f / p.scale;
  const float lo = static_cast<float>(qmin - p.zero_point);
  const float hi = static_cast<float>(qmax - p.zero_point);
  const float magic = 12582912.0f;  // 1.5 * 2^23
  const int32_t zp = p.zero_point;
  for (int64_t i = 0; i < n; ++i) {
    float t = x[i] * inv;
    t = t < lo ? lo : t;
    t = t > hi ? hi : t;
    const float r = (t + magic) - magic;
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(r) + zp);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// quantize_row_u8 in AVX-512, value for value: t within [lo, hi] (|t| <= 255)
// rounds to its integer in the current rounding mode as (t + magic) - magic
// does, and a NaN t converts to the same integer indefinite; the sum with zp
// stored as its low byte. The clone's 256-bit code packed its bytes over six
// shuffles a vector: 5.9 % of an int8 BERT run (batch 1, one thread, AMX);
// now 6.74 -> 6.59 ms a run. (maskz forms: GCC 12 warns on the plain ones.)
__attribute__((target("avx512f"))) void quantize_row_u8_avx512(const float* x, int64_t n, QParams p, int32_t qmin,
                                                               int32_t qmax, uint8_t* q) {
  const __m512 inv = _mm512_set1_ps(1.0f / p.scale);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(qmin - p.zero_point));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(qmax - p.zero_point));
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, lo, _CMP_LT_OQ), t, lo);
    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, hi, _CMP_GT_OQ), t, hi);
    _mm512_mask_cvtepi32_storeu_epi8(q + i, m, _mm512_add_epi32(_mm512_maskz_cvtps_epi32(m, t), zp));
  }
}
#endif

}  // namespace

float symmetric_scale(float min, float max, int32_t qmin, int32_t qmax) {
  const float m = std::max(-std::min(min, 0.0f), std::max(max, 0.0f));
  const float scale = m / (static_cast<float>(qmax - qmin) / 2.0f);
  return std::max(scale, std::numeric_limits<float>::epsilon());
}

void quantize_weight_int8(const float* w, int64_t n, int64_t k, bool per_channel, int8_t* q, float* scales,
                          bool reduce_range) {
  const int32_t qmin = reduce_range ? -64 : -128, qmax = reduce_range ? 64 : 127;
  if (!per_channel) {
    float mn = 0.0f, mx = 0.0f;
    if (n * k > 0) min_max(w, n * k, &mn, &mx);
    scales[0] = symmetric_scale(mn, mx, qmin, qmax);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      float mn = 0.0f, mx = 0.0f;
      if (k > 0) min_max(w + j * k, k, &mn, &mx);
      scales[j] = symmetric_scale(mn, mx, qmin, qmax);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const float inv = 1.0f / scales[per_channel ? j : 0];
    for (int64_t p = 0; p < k; ++p) q[j * k + p] = static_cast<int8_t>(quantize_val(w[j * k + p], inv, 0, qmin, qmax));
  }
}

void quantize_activations_u8(const float* x, int64_t m, int64_t k, int64_t ldx, bool per_row,
                             bool reduce_range, uint8_t* q, int64_t ldq, float* scales,
                             int32_t* zero_points) {
  const int32_t qmin = 0, qmax = reduce_range ? 127 : 255;
  // Rows in chunks of at least kQuantizeGrain values across the pool (a BERT
  // batch of 8: 1024 x 384 per product, 36 products a run, which ran on one
  // thread while the int8 GEMM used two). min and max do not depend on the
  // order the rows are scanned in, so the values are those of one thread.
  constexpr int64_t kQuantizeGrain = 32768, kMaxChunks = 64;
  const int64_t grain = std::max<int64_t>(1, kQuantizeGrain / std::max<int64_t>(1, k));
#if defined(__x86_64__) && defined(__GNUC__)
  static const auto quantize_row = __builtin_cpu_supports("avx512f") ? &quantize_row_u8_avx512 : &quantize_row_u8;
#else
  const auto quantize_row = &quantize_row_u8;
#endif
  if (!per_row && ldx == k && ldq == k) {
    // Dense, one scale: the values as one run in chunks of kQuantizeGrain
    // (short rows, a convolution's channels, cost a call each; 36 % of an
    // int8 MobileNetV2 run as rows of 3 to 96 values).
    const int64_t total = m * k;
    const int64_t chunks = std::min<int64_t>(kMaxChunks, (total + kQuantizeGrain - 1) / kQuantizeGrain);
    const int64_t step = chunks > 0 ? (total + chunks - 1) / chunks : 0;
    float lo[kMaxChunks], hi[kMaxChunks];
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) min_max(x + c * step, std::min(step, total - c * step), &lo[c], &hi[c]);
    });
    float mn = 0.0f, mx = 0.0f;  // ATen: an empty input quantizes over [0, 0]
    for (int64_t c = 0; c < chunks; ++c) {
      mn = c == 0 ? lo[c] : std::min(mn, lo[c]);
      mx = c == 0 ? hi[c] : std::max(mx, hi[c]);
    }
    const QParams p = choose_qparams(mn, mx, 0, 255, reduce_range);
    scales[0] = p.scale;
    zero_points[0] = p.zero_point;
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        quantize_row(x + c * step, std::min(step, total - c * step), p, qmin, qmax, q + c * step);
      }
    });
    return;
  }
  QParams p;
  if (!per_row) {
    float mn = 0.0f, mx = 0.0f;  // ATen: an empty input quantizes over [0, 0]
    if (m * k > 0) {
      const int64_t chunks = std::min<int64_t>(kMaxChunks, (m + grain - 1) / grain);
      const int64_t step = (m + chunks - 1) / chunks;
      float lo[kMaxChunks], hi[kMaxChunks];
      parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          lo[c] = std::numeric_limits<float>::infinity();
          hi[c] = -lo[c];
          for (int64_t i = c * step; i < std::min(m, (c + 1) * step); ++i) {
            float a, b;
            min_max(x + i * ldx, k, &a, &b);
            lo[c] = std::min(lo[c], a);
            hi[c] = std::max(hi[c], b);
          }
        }
      });
      mn = std::numeric_limits<float>::infinity();
      mx = -mn;
      for (int64_t c = 0; c < chunks; ++c) {
        mn = std::min(mn, lo[c]);
        mx = std::max(mx, hi[c]);
      }
    }
    p = choose_qparams(mn, mx, 0, 255, reduce_range);
    scales[0] = p.scale;
    zero_points[0] = p.zero_point;
  }
  parallel_for(0, m, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      QParams pr = p;
      if (per_row) {
        float mn = 0.0f, mx = 0.0f;
        if (k > 0) min_max(x + i * ldx, k, &mn, &mx);
        pr = choose_qparams(mn, mx, 0, 255, reduce_range);
        scales[i] = pr.scale;
        zero_points[i] = pr.zero_point;
      }
      quantize_row(x + i * ldx, k, pr, qmin, qmax, q + i * ldq);
      if (ldq > k) std::memset(q + i * ldq + k, 0, static_cast<size_t>(ldq - k));
    }
  });
}

}  // namespace ember::quant
