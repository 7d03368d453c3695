// The AVX2 + FMA (log_)softmax rows (softmax.h), for CPUs without AVX-512:
// softmax_avx512.cc's steps on 8-lane vectors. reduce.cc's RT_AVX2_FMA build
// of softmax_row compiles fast_exp with its NaN and overflow selects; here
// the row's maximum m is finite, so x - m lies in [-inf, 0]: lanes below -104
// (exp rounds to 0 there) are set to 0 without computing them, and 2^n is
// two integer-built factors, both normal for n in [-150, 0], so that results
// down to the subnormals round once. Two rows at once interleave the rows'
// dependent chains (each sum's adds); four, as on AVX-512, spilled the sums
// (ops_bench softmax_12x128x128 best of 4 rounds: 1 row 191 us, 2 rows 187,
// 4 rows 206). A row's values are the same alone or in a pair. Not bit for
// bit the RT_AVX2_FMA row's (its 2^n factors split n by truncation, its sum
// pairs lanes): within its rounding (normalization_test checks both against
// float64). Zen 3, one thread, against that row: ops_bench softmax_256x1000
// 296 -> 237 us, softmax_12x128x128 252 -> 200, its masked form 255 -> 196
// (best of 3 alternating rounds); the BERT-style encoder at batch 8, its
// softmaxes 11.5 -> 9.4 ms a run (per-op minima of 5 alternating runs, both
// orders; ORT's 5.3).
#include "kernels/cpu/softmax.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cmath>
#include <limits>

namespace ember::cpu {
namespace {

#define RT_AVX2 __attribute__((target("avx2,fma")))

// The first n < 8 lanes (kTail + 8 - n: n ones, then zeros).
alignas(32) constexpr int32_t kTail[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

RT_AVX2 __attribute__((always_inline)) inline __m256i tail_mask(int64_t n) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTail + 8 - n));
}

// exp(c) for c <= 0 (or -inf): fast_exp's polynomial (vec_math.h) in
// multiply-adds; 0 below -104.
RT_AVX2 __attribute__((always_inline)) inline __m256 exp_nonpositive(__m256 c) {
  const __m256 zero = _mm256_cmp_ps(c, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);
  c = _mm256_andnot_ps(zero, c);  // those lanes compute exp(0), zeroed below
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 s = _mm256_add_ps(_mm256_fmadd_ps(r, _mm256_mul_ps(p, r), r), _mm256_set1_ps(1.0f));
  // 2^n = 2^h 2^(n - h), h = floor(n / 2): both factors normal, the first product exact.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i h = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
  return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(s, f1), f2));
}

// The maximum of a row; *nan: whether it holds a NaN.
RT_AVX2 __attribute__((always_inline)) inline float row_max(const float* x, int64_t n, bool* nan) {
  const int64_t body = n / 8 * 8;
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 top = ninf, unordered = _mm256_setzero_ps();
  for (int64_t i = 0; i < body; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    top = _mm256_max_ps(top, v);
  }
  if (body < n) {
    const __m256 mask = _mm256_castsi256_ps(tail_mask(n - body));
    const __m256 v = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + body, _mm256_castps_si256(mask)), mask);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    top = _mm256_max_ps(top, v);
  }
  *nan = _mm256_movemask_ps(unordered) != 0;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, top);
  float m = lanes[0];
  for (int j = 1; j < 8; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

// R rows of n values (x and y rows n apart) whose maxima m[] are finite, the
// rows' steps interleaved. The sum in double: lane j adds the values at j
// mod 8 in order, the lanes are then added in order, the tail after them.
template <int R, bool kLog>
RT_AVX2 void rows(const float* __restrict x, float* __restrict y, int64_t n, const float* m) {
  const int64_t body = n / 8 * 8, tail = n - body;
  const __m256i mask = tail_mask(tail);
  __m256 vm[R];
  __m256d lo[R], hi[R];
  for (int q = 0; q < R; ++q) {
    vm[q] = _mm256_set1_ps(m[q]);
    lo[q] = hi[q] = _mm256_setzero_pd();
  }
  for (int64_t i = 0; i < body; i += 8) {
    for (int q = 0; q < R; ++q) {
      const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + q * n + i), vm[q]));
      _mm256_storeu_ps(y + q * n + i, e);
      lo[q] = _mm256_add_pd(lo[q], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      hi[q] = _mm256_add_pd(hi[q], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
  }
  double sum[R];
  for (int q = 0; q < R; ++q) {
    alignas(32) double lanes[8];
    _mm256_store_pd(lanes, lo[q]);
    _mm256_store_pd(lanes + 4, hi[q]);
    sum[q] = 0;
    for (int j = 0; j < 8; ++j) sum[q] += lanes[j];
    if (tail != 0) {
      alignas(32) float t[8];
      _mm256_store_ps(t, exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(x + q * n + body, mask), vm[q])));
      _mm256_maskstore_ps(y + q * n + body, mask, _mm256_load_ps(t));
      for (int64_t j = 0; j < tail; ++j) sum[q] += static_cast<double>(t[j]);
    }
  }
  for (int q = 0; q < R; ++q) {
    const float* xq = x + q * n;
    float* yq = y + q * n;
    if (kLog) {
      const __m256 shift = _mm256_set1_ps(static_cast<float>(std::log(sum[q])));
      for (int64_t i = 0; i < body; i += 8)
        _mm256_storeu_ps(yq + i, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(xq + i), vm[q]), shift));
      if (tail != 0) {
        const __m256 v = _mm256_maskload_ps(xq + body, mask);
        _mm256_maskstore_ps(yq + body, mask, _mm256_sub_ps(_mm256_sub_ps(v, vm[q]), shift));
      }
    } else {
      const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum[q]));
      for (int64_t i = 0; i < body; i += 8) _mm256_storeu_ps(yq + i, _mm256_mul_ps(_mm256_loadu_ps(yq + i), inv));
      if (tail != 0) _mm256_maskstore_ps(yq + body, mask, _mm256_mul_ps(_mm256_maskload_ps(yq + body, mask), inv));
    }
  }
}

// Up to kSoftmaxRows rows; the mask of those left to the caller (a NaN, or no finite maximum).
template <bool kLog>
RT_AVX2 unsigned block(const float* x, float* y, int64_t n, int count) {
  float m[kSoftmaxRows];
  unsigned left = 0;
  for (int q = 0; q < count; ++q) {
    bool nan = false;
    m[q] = row_max(x + q * n, n, &nan);
    if (nan || !std::isfinite(m[q])) left |= 1u << q;
  }
  // Two rows at a time: with four, the sums' accumulators and the exp's
  // temporaries outgrew the 16 registers (the sums went to the stack).
  for (int q = 0; q < count;) {
    if (q + 1 < count && (left >> q & 3u) == 0) {
      rows<2, kLog>(x + q * n, y + q * n, n, m + q);
      q += 2;
      continue;
    }
    if ((left >> q & 1u) == 0) rows<1, kLog>(x + q * n, y + q * n, n, m + q);
    ++q;
  }
  return left;
}

}  // namespace

unsigned softmax_rows_avx2(const float* x, float* y, int64_t n, int rows, bool log) {
  return log ? block<true>(x, y, n, rows) : block<false>(x, y, n, rows);
}

}  // namespace ember::cpu

#else

namespace ember::cpu {
unsigned softmax_rows_avx2(const float*, float*, int64_t, int rows, bool) { return (1u << rows) - 1u; }
}  // namespace ember::cpu

#endif
